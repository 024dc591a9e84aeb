"""A seed that replays (issue 21, item 1): every failure report names, in one line, the
command that reruns the test, and that command gives the same faults and the same waits."""

from __future__ import annotations

import json
import re
import shlex

import pytest

PROBABILISTIC = """
import json

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), probability=0.5, strict=False)
def test_other(faults):
    make().run("go")

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("first"))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), probability=0.5, times=3)
def test_replayed(trace, faults):
    make(resilience=af.ResilienceConfig(max_retries=8)).run("go")
    seen = {"fired": [f.occurrence for f in faults.fired], "delays": trace.delays()}
    with open("seen.json", "w") as out:
        json.dump(seen, out)
    assert False, "fails on purpose"
"""

REPLAY = re.compile(r"^replay: (pytest .*)$", re.MULTILINE)


def _replay_command(out: str) -> list[str]:
    commands = REPLAY.findall(out)
    assert len(commands) == 1, out
    return shlex.split(commands[0])


def _seen(pytester) -> dict[str, list[float]]:
    seen: dict[str, list[float]] = json.loads((pytester.path / "seen.json").read_text())
    return seen


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["default", "-q"])
def test_the_printed_command_replays_the_same_faults_and_waits(suite, quiet):
    pytester = suite(PROBABILISTIC)
    first = pytester.runpytest(*quiet)
    first.assert_outcomes(passed=1, failed=1)
    command = _replay_command(first.stdout.str())
    assert command[0] == "pytest"
    assert re.fullmatch(r"--agentfaults-seed=\d+", command[1])
    assert command[2:] == ["test_suite.py::test_replayed"]
    original = _seen(pytester)
    assert original["delays"], "the first fault always fires, so the agent waited"

    again = pytester.runpytest(*quiet, *command[1:])  # only that test, and -p randomly on
    again.assert_outcomes(failed=1)
    assert _seen(pytester) == original
    assert _replay_command(again.stdout.str()) == command

    other = int(command[1].split("=")[1]) + 1
    pytester.runpytest(f"--agentfaults-seed={other}", "test_suite.py::test_replayed")
    assert _seen(pytester)["delays"] != original["delays"]  # the seed is what decides


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_command_printed_under_xdist_replays_without_it(suite):
    pytester = suite(PROBABILISTIC)
    first = pytester.runpytest_subprocess("-n", "2", "-q")
    first.assert_outcomes(passed=1, failed=1)
    out = first.stdout.str()
    command = _replay_command(out)
    assert "agentfaults: seed=" in out  # the controller prints it with the summary
    original = _seen(pytester)
    again = pytester.runpytest_subprocess("-p", "no:xdist", *command[1:])
    again.assert_outcomes(failed=1)
    assert _seen(pytester) == original
