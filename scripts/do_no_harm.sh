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
  for mode in on off; do
    plugin=()
    [ "$mode" = off ] && plugin=(-p no:agentfaults)
    (cd "$src" && "$PY" -m pytest tests -p no:cacheprovider -p no:randomly \
      "${plugin[@]}" --junitxml="$WORK/reports/$name-$mode.xml" >"$WORK/reports/$name-$mode.log" 2>&1) \
      || true
  done
  for mode in on off; do  # pytest's own last line: the counts and the time taken
    echo "$name: $mode: $(grep -E "(passed|failed).* in [0-9.]+s" "$WORK/reports/$name-$mode.log" | tail -1)"
  done
  # The header proves the plugin was loaded in one run and not in the other.
  grep -q "^agentfaults: seed=" "$WORK/reports/$name-on.log" || { echo "$name: plugin not loaded"; status=1; }
  ! grep -q "^agentfaults: seed=" "$WORK/reports/$name-off.log" || { echo "$name: not off"; status=1; }
  "$PY" - "$WORK/reports/$name-on.xml" "$WORK/reports/$name-off.xml" "$name" <<'EOF' || status=1
import collections, sys
import xml.etree.ElementTree as ET

def outcomes(path):
    result = {}
    for case in ET.parse(path).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        key = f"{case.get('classname')}::{case.get('name')}"
        result[key] = kinds[0] if kinds else "passed"
    return result

on, off, name = outcomes(sys.argv[1]), outcomes(sys.argv[2]), sys.argv[3]
count = lambda runs: dict(sorted(collections.Counter(runs.values()).items()))
print(f"{name}: plugin on  {count(on)}")
print(f"{name}: plugin off {count(off)}")
differ = sorted(k for k in on.keys() | off.keys() if on.get(k) != off.get(k))
for key in differ:
    print(f"  DIFFERS {key}: on={on.get(key)} off={off.get(key)}")
if not on:
    print(f"  no test ran: see the logs next to {sys.argv[1]}")
sys.exit(1 if differ or not on else 0)
EOF
done
[ "$status" = 0 ] && echo "do no harm: identical outcomes" || echo "do no harm: OUTCOMES DIFFER"
exit "$status"
