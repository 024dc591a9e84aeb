"""``real_time`` with the ``virtual_clock`` fixture: the error shows the user's test.

Not the fixture machinery of another plugin (pytest-asyncio's fixture-setup wrapper in an
``asyncio_mode = auto`` project; audit finding 11).
"""

from __future__ import annotations


def test_real_time_with_virtual_clock_points_at_the_test_not_at_plugins(pytester):
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\nasyncio_mode = auto\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )
    pytester.makepyfile(
        test_rt="""
        import pytest

        @pytest.mark.real_time
        def test_real(virtual_clock):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*UsageError: test_rt.py::test_real is marked real_time, so it has no virtual clock*"]
    )
    errors = result.stdout.str().split("short test summary")[0]
    assert "pytest_asyncio" not in errors
    assert "_pytest/" not in errors
    assert "pytest_agentfaults/" not in errors


def test_real_time_asking_for_virtual_clock_late_gets_the_same_error(pytester):
    pytester.makepyfile(
        test_late="""
        import pytest
        import pytest_agentfaults as af

        @pytest.mark.real_time
        def test_late(request):
            with pytest.raises(af.UsageError, match="marked real_time, so it has no virtual"):
                request.getfixturevalue("virtual_clock")
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
