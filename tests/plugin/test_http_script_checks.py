"""``http_faults.script``: a request with no step left, and steps left over, fail the test."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")


def test_a_request_with_no_step_left_gets_a_400_and_fails_the_test(pytester):
    pytester.makepyfile(
        """
        import openai
        from pytest_agentfaults.testing import say

        def test_it(http_faults):
            http_faults.script("openai", [say("one")])
            ask = [{"role": "user", "content": "hi"}]
            with openai.OpenAI(api_key="sk-test", max_retries=0) as client:
                client.chat.completions.create(model="gpt-4o-mini", messages=ask)
                try:  # the app swallows the 400
                    client.chat.completions.create(model="gpt-4o-mini", messages=ask)
                except openai.BadRequestError:
                    pass
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*http_faults.script('openai', ...)*"])


def test_leftover_steps_fail_the_test(pytester):
    pytester.makepyfile(
        """
        from pytest_agentfaults.testing import say

        def test_it(http_faults):
            http_faults.assert_all_called = False
            http_faults.script("anthropic", [say("never asked")])
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*http_faults.script('anthropic', ...): the script has 1 step left over*"
            "strict=False) to allow them.*"
        ]
    )


def test_a_cut_never_asked_again_leaves_its_step_over(pytester):
    pytester.makepyfile(
        """
        import openai
        import pytest
        from pytest_agentfaults import say

        @pytest.mark.inject_fault(http="truncated_stream", after=2)
        def test_it(http_faults):
            http_faults.script("openai", [say("Sunny all week.")])
            with openai.OpenAI(api_key="sk-test") as client:
                with pytest.raises(openai.APIConnectionError):
                    list(client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                        stream=True,
                    ))
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*http_faults.script('openai', ...): the script has 1 step left over*"]
    )
