#!/usr/bin/env bash
# Mutation testing of the recovery core with mutmut 3 (docs/testing-the-tests.md).
#
#   scripts/mutation.sh                 every file of the recovery core
#   scripts/mutation.sh --changed       only those of its files changed since main (CI)
#   scripts/mutation.sh --changed REF   ... changed since REF
#   scripts/mutation.sh backoff policy  only the files whose path contains these words
#
# mutmut plants one small bug (a "mutant") at a time in a copy of src/ under mutants/ and
# runs only the tests that reach the mutated function; a mutant the tests still pass on
# "survived". The files and the test selection are in pyproject.toml's [tool.mutmut]; the
# functions scored in errors.py and testing/_fault.py are the recovery ones listed below.
# `.venv/bin/mutmut show NAME` prints a mutant's diff; `.venv/bin/mutmut results` lists the
# survivors. Prints the score per file at the end; exits 1 when a mutant survived that
# docs/testing-the-tests.md does not list as equivalent.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
if ! .venv/bin/python -c "import pytest_agentfaults, hypothesis" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet -e '.[test]'
fi
if [[ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mutmut"))' 2>/dev/null)" != "3.8.1" ]]; then
    .venv/bin/python -m pip install --quiet 'mutmut==3.8.1'
fi

# file (as in [tool.mutmut] only_mutate)  ->  the mutant names scored in it (fnmatch globs)
P=pytest_agentfaults
declare -A PATTERNS=(
    [src/$P/runtime/backoff.py]="$P.runtime.backoff.*"
    [src/$P/runtime/policy.py]="$P.runtime.policy.*"
    [src/$P/runtime/decisions.py]="$P.runtime.decisions.*"
    [src/$P/errors.py]="$P.errors.x_classify__* $P.errors.x_kind_and_retryable__* $P.errors.x__is_transient__* $P.errors.x_is_retryable_status__*"
    [src/$P/_ambiguity.py]="$P._ambiguity.x_is_ambiguous__*"
    [src/$P/runtime/_toolcalls.py]="$P.runtime._toolcalls.*"
    [src/$P/runtime/_run.py]="$P.runtime._run.*"
    [src/$P/runtime/_drivers.py]="$P.runtime._drivers.*"
    [src/$P/runtime/models/_retry.py]="$P.runtime.models._retry.*"
    [src/$P/runtime/models/_retry_after.py]="$P.runtime.models._retry_after.*"
    [src/$P/testing/faults.py]="$P.testing.faults.*"
    [src/$P/testing/_fault.py]="$P.testing._fault.xǁFaultBaseǁ* $P.testing._fault.*ǁkey__*"
    [src/$P/runtime/verdict.py]="$P.runtime.verdict.*"
    [src/$P/runtime/_verdict_codes.py]="$P.runtime._verdict_codes.*"
    [src/$P/runtime/_verdict_http.py]="$P.runtime._verdict_http.*"
    [src/$P/runtime/_verdict_rules.py]="$P.runtime._verdict_rules.*"
)
ORDER=(
    runtime/backoff.py runtime/policy.py runtime/decisions.py errors.py _ambiguity.py
    runtime/models/_retry_after.py runtime/models/_retry.py testing/faults.py testing/_fault.py
    runtime/verdict.py runtime/_verdict_codes.py runtime/_verdict_http.py runtime/_verdict_rules.py
    runtime/_toolcalls.py runtime/_drivers.py runtime/_run.py
)

files=()
if [[ "${1:-}" == "--changed" ]]; then
    ref="${2:-main}"
    changed="$(git diff --name-only "$ref"... -- src; git diff --name-only -- src)"
    for f in "${ORDER[@]}"; do
        if grep -qx "src/$P/$f" <<<"$changed"; then files+=("src/$P/$f"); fi
    done
    if [[ ${#files[@]} -eq 0 ]]; then
        echo "mutation: no file of the recovery core changed since $ref"
        exit 0
    fi
else
    for f in "${ORDER[@]}"; do
        if [[ $# -eq 0 ]]; then files+=("src/$P/$f"); continue; fi
        for word in "$@"; do
            if [[ "$f" == *"$word"* ]]; then files+=("src/$P/$f"); break; fi
        done
    done
fi

patterns=()
for f in "${files[@]}"; do
    read -r -a ps <<<"${PATTERNS[$f]}"
    patterns+=("${ps[@]}")
done

# The property tests' fast profile (tests/properties/conftest.py): 20 derandomized examples
# instead of CI's 60, since mutmut runs them again for every mutant of the run loop.
export AGENTFAULTS_PROFILE="${AGENTFAULTS_PROFILE:-mutation}"

start=$(date +%s)
.venv/bin/mutmut run --max-children "${MUTATION_JOBS:-2}" "${patterns[@]}"
echo "mutation: ran in $(( $(date +%s) - start )) s"
.venv/bin/python scripts/mutation_score.py "${patterns[@]}"
