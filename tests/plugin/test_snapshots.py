"""Golden traces: per-session settings, and a stored form that does not depend on the seed."""

from __future__ import annotations

import json

# The outer suite itself runs a pytest session in-process (pytester), then checks a golden
# trace of its own: the inner session must not change where, or whether, it is written.
NESTED = """
pytest_plugins = ["pytester"]

def test_outer(trace, pytester):
    pytester.makepyfile(test_inner="def test_nothing():\\n    pass\\n")
    pytester.runpytest_inprocess(
        "-p", "no:hypothesispytest", "-o", "asyncio_default_fixture_loop_scope=function", {inner_args}
    ).assert_outcomes(passed=1)
    make().run("go")
    with pytest.raises(AssertionError, match="does not match the golden trace"):
        trace.assert_matches_snapshot("golden.json")
    assert not (pytester.path / "golden.json").exists()  # nothing written in the inner dir
"""


def _nested(suite, inner_args: str):
    pytester = suite(NESTED.format(inner_args=inner_args))
    (pytester.path / "golden.json").write_text('{"events": []}\n')  # does not match the run
    return pytester


def test_an_inner_session_does_not_move_the_outer_sessions_snapshots(suite):
    pytester = _nested(suite, "")
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    assert (pytester.path / "golden.json").read_text() == '{"events": []}\n'


def test_an_inner_update_run_does_not_switch_the_outer_session_to_update(suite):
    pytester = _nested(suite, '"--agentfaults-update-snapshots"')
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    assert (pytester.path / "golden.json").read_text() == '{"events": []}\n'


# A run with two jittered retries: the delays (and times) differ with every seed.
JITTERED = """
import os

EXACT = os.environ.get("EXACT") == "1"

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_golden(trace):
    config = af.ResilienceConfig(base_delay=float(os.environ.get("BASE_DELAY", "1")))
    assert make(resilience=config).run("go").output == "done"
    with open("delays.txt", "a") as seen:  # the outer test checks that the jitter varied
        seen.write(f"{trace.delays()}\\n")
    trace.assert_matches_snapshot("fixtures/traces/golden.json", exact_times=EXACT)
"""


def test_a_committed_snapshot_passes_under_any_seed(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the first run writes the golden trace
    pytester = suite(JITTERED)
    pytester.runpytest("--agentfaults-seed=1").assert_outcomes(passed=1)
    golden = pytester.path / "fixtures" / "traces" / "golden.json"
    document = json.loads(golden.read_text())
    assert document["format"] == 2
    assert document["times"] == "none"
    retries = [e for e in document["events"] if e["type"] == "tool.retry"]
    assert [(e["tool"], e["attempt"], e["waited"]) for e in retries] == [
        ("fetch", 2, True),
        ("fetch", 3, True),
    ]
    assert not any("at" in e or "delay" in e for e in document["events"])
    for seed in (2, 3, 4):
        pytester.runpytest(f"--agentfaults-seed={seed}").assert_outcomes(passed=1)
    delays = (pytester.path / "delays.txt").read_text().splitlines()
    assert len(delays) == len(set(delays)) == 4  # the jitter really differed between seeds
    assert json.loads(golden.read_text()) == document  # and nothing rewrote the file


def test_exact_times_keep_the_delays_and_detect_a_changed_one(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the first run writes the golden trace
    monkeypatch.setenv("EXACT", "1")
    pytester = suite(JITTERED)
    pytester.runpytest("--agentfaults-seed=7").assert_outcomes(passed=1)
    golden = pytester.path / "fixtures" / "traces" / "golden.json"
    document = json.loads(golden.read_text())
    assert (document["times"], document["seed"]) == ("exact", 7)
    assert "--agentfaults-seed=7" in document["note"]
    assert next(e["delay"] for e in document["events"] if e["type"] == "tool.retry") > 1
    pytester.runpytest("--agentfaults-seed=7").assert_outcomes(passed=1)  # same seed matches

    monkeypatch.setenv("BASE_DELAY", "2")  # the same seed, a changed backoff
    changed = pytester.runpytest("--agentfaults-seed=7")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*trace does not match the golden trace*golden.json",
            "*keeps exact times (exact_times=True): a changed delay or time fails it",
            "*rewrite it: pytest --agentfaults-update-snapshots",
            '*-*"delay": *',
            '*+*"delay": *',
        ]
    )
    monkeypatch.delenv("BASE_DELAY")
    other_seed = pytester.runpytest("--agentfaults-seed=8")
    other_seed.assert_outcomes(failed=1)
    other_seed.stdout.fnmatch_lines(
        ["*only under the seed it was written with (--agentfaults-seed=7)*seed is 8*"]
    )


def test_a_seed_free_mismatch_shows_a_readable_diff_and_the_fix(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the first run writes the golden trace
    pytester = suite(JITTERED)
    pytester.runpytest().assert_outcomes(passed=1)
    golden = pytester.path / "fixtures" / "traces" / "golden.json"
    golden.write_text(golden.read_text().replace('"reset"', '"refused"', 1))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*trace does not match the golden trace*golden.json",
            "*compared in the seed-free form: event kinds, targets, attempts and outcomes*",
            "*if the change is intended, rewrite it: pytest --agentfaults-update-snapshots",
            "*--- *golden.json (golden)",
            "*+++ this run",
            '*-*"message": "refused"*',
            '*+*"message": "reset"*',
        ]
    )


def test_the_two_forms_do_not_mix_silently(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the first run writes the golden trace
    pytester = suite(JITTERED)
    pytester.runpytest().assert_outcomes(passed=1)  # seed-free file
    monkeypatch.setenv("EXACT", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*is seed-free (no times)*called with exact_times=True*"])
    pytester.runpytest("--agentfaults-update-snapshots").assert_outcomes(passed=1)
    monkeypatch.delenv("EXACT")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*keeps exact times, but*called without exact_times=True*"])


# In CI a golden trace that is not there was never committed (or the path is misspelt): a
# file written on the CI machine is thrown away with it, and the test would pass while
# comparing nothing, on every run. So there it fails, as insta does; on a developer's
# machine the first run writes the file, to be committed.
def test_in_ci_a_missing_golden_trace_fails_and_writes_nothing(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester = suite(JITTERED)
    golden = pytester.path / "fixtures" / "traces" / "golden.json"
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*golden trace *golden.json does not exist, and in CI (CI='true') a missing one "
            "fails instead of being written*",
            "*run the test where the file is kept (or pytest --agentfaults-update-snapshots) "
            "and commit it, or fix the path*",
        ]
    )
    assert not golden.exists()
    pytester.runpytest("--agentfaults-update-snapshots").assert_outcomes(passed=1)
    assert golden.exists()  # asked for by name: written in CI too
    pytester.runpytest().assert_outcomes(passed=1)


def test_outside_ci_a_missing_golden_trace_is_written_and_the_test_passes(suite, monkeypatch):
    for off in ("", "false", "0"):
        monkeypatch.setenv("CI", off)
        pytester = suite(JITTERED)
        golden = pytester.path / "fixtures" / "traces" / "golden.json"
        golden.unlink(missing_ok=True)
        pytester.runpytest().assert_outcomes(passed=1)
        assert json.loads(golden.read_text())["format"] == 2
    monkeypatch.delenv("CI")
    golden.unlink()
    pytester.runpytest().assert_outcomes(passed=1)
    assert golden.exists()
