"""Golden traces: per-session settings, and a stored form that does not depend on the seed."""

from __future__ import annotations

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
