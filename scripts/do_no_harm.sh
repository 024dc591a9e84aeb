#!/usr/bin/env bash
# Do no harm: installing pytest-agentfaults must not change any unrelated test's outcome.
#
# Runs real third-party test suites, from their sdists, twice in one fresh venv where this
# package is installed: once with the plugin on (as it loads wherever it is installed) and
# once with `-p no:agentfaults`. Prints each run's outcome counts and fails when any test's
# outcome differs between the two runs. Not part of CI: it downloads the sdists from PyPI.
#
#   scripts/do_no_harm.sh            # WORK=/tmp/... to keep the venv and reports
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-$(mktemp -d)}"
PYTHON="${PYTHON:-python3}"
# name==version, the suite's own test dependencies (kept to what the suites import)
SUITES=(
  "tenacity==9.1.2|tornado typeguard"
  "stamina==26.1.0|anyio dirty-equals structlog"
  "pytest-httpx==0.36.2|pytest-asyncio"
)

echo "work dir: $WORK"
if [ ! -x "$WORK/venv/bin/python" ]; then
  "$PYTHON" -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q -e "$ROOT" 2>&1 | grep -v "is ignored" || true
fi
PY="$WORK/venv/bin/python"
mkdir -p "$WORK/sdists" "$WORK/reports"

status=0
for entry in "${SUITES[@]}"; do
  spec="${entry%%|*}"
  deps="${entry#*|}"
  name="${spec%%==*}"
  "$PY" -m pip download -q --no-binary :all: --no-deps -d "$WORK/sdists" "$spec" 2>&1 \
    | grep -v "is ignored" || true
  archive="$( (ls "$WORK"/sdists/"$(echo "$name" | tr - _)"-*.tar.gz \
    "$WORK"/sdists/"$name"-*.tar.gz 2>/dev/null || true) | head -1)"
  src="$WORK/src/$name"
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$archive" -C "$src" --strip-components=1
  # The suite tests the sdist's own code: install it (no deps: they come from the list).
  # shellcheck disable=SC2086 # deps is a word list
  "$PY" -m pip install -q --no-deps "$src" $deps 2>&1 | grep -v "is ignored" || true
  "$PY" -m pip install -q $deps 2>&1 | grep -v "is ignored" || true
  # Timing-sensitive tests (tenacity's asserts a 1 ms bound on a real wait) can flip on a
  # busy machine: when outcomes differ, both runs are repeated (3 rounds at most), and only
  # a test whose outcome differs in every round counts as harm; the others print as flaky.
  round=1
  while :; do
    for mode in on off; do
      # off: PYTEST_ADDOPTS, so the sessions a suite starts itself (pytester) are off too
      addopts=""
      [ "$mode" = off ] && addopts="-p no:agentfaults"
      (cd "$src" && PYTEST_ADDOPTS="$addopts" "$PY" -m pytest tests -p no:cacheprovider \
        -p no:randomly --junitxml="$WORK/reports/$name-$mode-$round.xml" \
        >"$WORK/reports/$name-$mode-$round.log" 2>&1) || true
      # pytest's own last line: the counts and the time taken
      echo "$name: $mode (round $round): $(grep -E "(passed|failed).* in [0-9.]+s" \
        "$WORK/reports/$name-$mode-$round.log" | tail -1)"
    done
    # pytest's header lists the loaded plugins: ours in one run and not in the other (a
    # session that never uses the kit prints no line of its own).
    grep -m1 "^plugins:" "$WORK/reports/$name-on-$round.log" | grep -q "agentfaults-" \
      || { echo "$name: plugin not loaded"; status=1; }
    ! grep -m1 "^plugins:" "$WORK/reports/$name-off-$round.log" | grep -q "agentfaults-" \
      || { echo "$name: not off"; status=1; }
    verdict=0
    "$PY" - "$WORK/reports" "$name" "$round" <<'EOF' || verdict=$?
import collections, sys
import xml.etree.ElementTree as ET

def outcomes(path):
    result = {}
    for case in ET.parse(path).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        key = f"{case.get('classname')}::{case.get('name')}"
        result[key] = kinds[0] if kinds else "passed"
    return result

reports, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [
    (outcomes(f"{reports}/{name}-on-{r}.xml"), outcomes(f"{reports}/{name}-off-{r}.xml"))
    for r in range(1, rounds + 1)
]
on, off = runs[-1]
count = lambda results: dict(sorted(collections.Counter(results.values()).items()))
print(f"{name}: plugin on  {count(on)}")
print(f"{name}: plugin off {count(off)}")
keys = set().union(*(a.keys() | b.keys() for a, b in runs))
differ_once = sorted(k for k in keys if any(a.get(k) != b.get(k) for a, b in runs))
harm = [k for k in differ_once if all(a.get(k) != b.get(k) for a, b in runs)]
for key in differ_once:
    seen = ", ".join(f"on={a.get(key)} off={b.get(key)}" for a, b in runs)
    print(f"  {'DIFFERS' if key in harm else 'FLAKY  '} {key}: {seen}")
if not on:
    print(f"  no test ran: see the logs next to {reports}")
    sys.exit(1)
sys.exit(2 if harm else 0)
EOF
    if [ "$verdict" = 2 ] && [ "$round" -lt 3 ]; then round=$((round + 1)); continue; fi
    [ "$verdict" = 0 ] || status=1
    break
  done
done
[ "$status" = 0 ] && echo "do no harm: identical outcomes" || echo "do no harm: OUTCOMES DIFFER"
exit "$status"
