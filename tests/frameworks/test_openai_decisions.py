"""Tool faults reach the openai SDK's Decisions runner: the actions it chooses to execute.

``openai.lib.decisions_tool_runner`` asks the model (``client.decisions.create``) to choose
one of the caller's candidates at each step, and executes the chosen action's ``execute()``
(no arguments, its result unread: the next step observes the world afresh). An action
that raises stops the run: the runner raises ``DecisionsToolRunnerError("failed")``, with
the candidate among the attempted and not the completed, and the app decides whether to
run again. ``tool=`` faults never reached those actions; now each execution is one attempt
(``framework="openai"``, the fault's name the candidate's ``id``), sync and async. The
model is the real SDK, its ``/v1/decisions`` requests answered by an ``http_faults`` route
with bodies of the SDK's own ``Decision`` type.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.lib.decisions_tool_runner import (
    AsyncDecisionsToolRunner,
    DecisionsToolRunner,
    DecisionsToolRunnerError,
)
from openai.types import Decision

import pytest_agentfaults as af

URL = "https://api.openai.com/v1/decisions"
PARAMS: Any = {"model": "gpt-5", "input": "Refund order 7 if it was charged twice."}


def decision(choice: str) -> dict[str, Any]:
    """The body of a ``Decision`` choosing ``choice``, built and checked by the SDK's type."""
    body = {
        "answers": [
            {
                "type": "choice",
                "name": "next_action",
                "choice": choice,
                "confidence": 0.9,
                "probabilities": [{"value": choice, "probability": 0.9}],
            }
        ],
        "model": "gpt-5",
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12,
        },
    }
    return Decision.model_validate(body).model_dump(mode="json")


def choose(http_faults: Any, *choices: str) -> Any:
    """The model's choices, one per ``/v1/decisions`` request, in order."""
    route = http_faults.post(URL)
    route.side_effect = [httpx.Response(200, json=decision(c)) for c in choices]
    return route


class Shop:
    """The app's world: what the actions change and what the runner observes."""

    def __init__(self) -> None:
        self.refunded: list[int] = []

    def observe(self) -> str:
        return f"order 7: charged twice, refunded {len(self.refunded)} times"

    def refund(self) -> str:
        self.refunded.append(7)
        return "refunded"

    def candidates(self, observation: Any) -> list[Any]:
        return [
            {"id": "refund", "description": "Refund order 7", "execute": self.refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ]

    def runner(self) -> DecisionsToolRunner:
        return DecisionsToolRunner(observe=self.observe, candidates=self.candidates)


def asked(http_faults: Any) -> list[str]:
    """What the runner showed the model at each request: the observation."""
    return [json.loads(c.request.content)["input"][1]["content"] for c in http_faults.calls]


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("payments down"), times=1)
def test_a_raised_fault_stops_the_run_and_a_second_run_recovers(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    shop = Shop()
    choose(http_faults, "refund", "refund", "done")
    with pytest.raises(DecisionsToolRunnerError) as stopped:  # the SDK's own handling
        shop.runner().run(openai_client, PARAMS)
    assert stopped.value.reason == "failed"
    assert stopped.value.attempted_candidate_ids == ("refund",)
    assert stopped.value.completed_candidate_ids == ()
    assert shop.refunded == []  # the fault came in the action's place
    # the app's recovery: run again
    result = shop.runner().run(openai_client, PARAMS)
    assert result["completed_candidate_ids"] == ["refund"]
    assert shop.refunded == [7]
    errors = trace.of("tool.error")
    assert [(e.tool, e.field("framework"), e.error.type) for e in errors] == [
        ("refund", "openai", "ConnectionError")
    ]
    assert [e.tool for e in trace.of("tool.result")] == ["refund"]
    assert trace.of("tool.retry") == []  # another run: the app ran again, no retry of it


@pytest.mark.inject_fault(tool="refund", returns=af.ToolFailure(error="payments busy"), times=1)
def test_a_returned_failure_completes_the_step_and_the_model_chooses_again(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # the runner reads no action's result: the step completes, the world is unchanged
    # (the action did not run), and the model, seeing it so, chooses the action again
    shop = Shop()
    choose(http_faults, "refund", "refund", "done")
    result = shop.runner().run(openai_client, PARAMS)
    assert result["completed_candidate_ids"] == ["refund", "refund"]
    assert shop.refunded == [7]
    assert asked(http_faults)[1] == "order 7: charged twice, refunded 0 times"
    (error,) = trace.of("tool.error")
    assert error.field("framework") == "openai"
    assert error.error.message == "payments busy"
    (retry,) = trace.of("tool.retry")
    assert retry.by == "model"  # a later step's choice of the failed action
    assert retry.attempt == 2


@pytest.mark.inject_fault(tool="refund", returns="refund queued")
def test_a_returned_value_completes_the_step_without_running_the_action(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    shop = Shop()
    choose(http_faults, "refund", "done")
    result = shop.runner().run(openai_client, PARAMS)
    assert result["completed_candidate_ids"] == ["refund"]
    assert shop.refunded == []
    (shown,) = trace.of("tool.result")
    assert shown.detail == "refund queued"


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), at=2)
def test_at_counts_the_executions_of_the_action(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    shop = Shop()
    choose(http_faults, "refund", "refund", "done")
    with pytest.raises(DecisionsToolRunnerError) as stopped:
        shop.runner().run(openai_client, PARAMS)
    assert stopped.value.attempted_candidate_ids == ("refund", "refund")
    assert stopped.value.completed_candidate_ids == ("refund",)
    assert shop.refunded == [7]
    assert [e.type for e in trace.of("tool.*")] == [
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.fault",
        "tool.error",
    ]


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), strict=False)
def test_the_action_is_named_by_its_candidate_id_not_its_function(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # two candidates sharing one function: the fault reaches the one chosen by its id
    shop = Shop()
    choose(http_faults, "retry_refund", "done")

    def candidates(observation: Any) -> list[Any]:
        return [
            {"id": "refund", "description": "Refund order 7", "execute": shop.refund},
            {"id": "retry_refund", "description": "Refund it again", "execute": shop.refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ]

    runner = DecisionsToolRunner(observe=shop.observe, candidates=candidates)
    assert runner.run(openai_client, PARAMS)["completed_candidate_ids"] == ["retry_refund"]
    assert shop.refunded == [7]
    assert [e.tool for e in trace.of("tool.call")] == ["retry_refund"]
    assert trace.of("tool.fault") == []


def test_the_action_still_gets_the_runs_cancelled_callable(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # the SDK hands ``cancelled`` to an action that takes it; through the hook too
    seen: list[Callable[[], bool] | None] = []

    def cancelled() -> bool:
        return False

    def refund(*, cancelled: Callable[[], bool] | None) -> None:
        seen.append(cancelled)

    choose(http_faults, "refund", "done")
    runner = DecisionsToolRunner(
        observe=lambda: "order 7",
        candidates=lambda observation: [
            {"id": "refund", "description": "Refund order 7", "execute": refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ],
    )
    runner.run(openai_client, PARAMS, cancelled=cancelled)
    assert seen == [cancelled]
    assert [e.tool for e in trace.of("tool.result")] == ["refund"]


def test_an_async_action_given_to_the_sync_runner_is_no_attempt(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # the sync runner refuses an executor that returns an awaitable: nothing ran
    async def refund() -> None:
        raise AssertionError("never awaited")

    choose(http_faults, "refund", "done")
    runner = DecisionsToolRunner(
        observe=lambda: "order 7",
        candidates=lambda observation: [
            {"id": "refund", "description": "Refund order 7", "execute": refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ],
    )
    with pytest.raises(DecisionsToolRunnerError) as refused:
        runner.run(openai_client, PARAMS)
    assert refused.value.reason == "async_executor"
    assert trace.of("tool.*") == []


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("payments down"), times=1)
def test_the_async_runner_too(http_faults: Any, async_openai_client: Any, trace: af.Trace) -> None:
    refunded: list[int] = []

    async def observe() -> str:
        return f"order 7: refunded {len(refunded)} times"

    async def refund() -> None:
        await asyncio.sleep(0)
        refunded.append(7)

    async def candidates(observation: Any) -> list[Any]:
        return [
            {"id": "refund", "description": "Refund order 7", "execute": refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ]

    choose(http_faults, "refund", "refund", "done")

    async def main() -> Any:
        runner = AsyncDecisionsToolRunner(observe=observe, candidates=candidates)
        with pytest.raises(DecisionsToolRunnerError) as stopped:
            await runner.run(async_openai_client, PARAMS)
        assert stopped.value.completed_candidate_ids == ()
        again = AsyncDecisionsToolRunner(observe=observe, candidates=candidates)
        return await again.run(async_openai_client, PARAMS)

    result = asyncio.run(main())
    assert result["completed_candidate_ids"] == ["refund"]
    assert refunded == [7]
    assert [e.type for e in trace.of("tool.*")] == [
        "tool.call",
        "tool.fault",
        "tool.error",
        "tool.call",
        "tool.result",
    ]
    assert {e.field("framework") for e in trace.of("tool.*")} == {"openai"}


@pytest.mark.inject_fault(tool="refund", returns=af.ToolFailure(error="busy"), times=1)
def test_the_async_runner_reads_a_returned_failure_as_a_completed_step(
    http_faults: Any, async_openai_client: Any, trace: af.Trace
) -> None:
    refunded: list[int] = []

    async def observe() -> str:
        return f"order 7: refunded {len(refunded)} times"

    async def refund() -> None:
        refunded.append(7)

    async def candidates(observation: Any) -> list[Any]:
        return [
            {"id": "refund", "description": "Refund order 7", "execute": refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ]

    choose(http_faults, "refund", "refund", "done")
    runner = AsyncDecisionsToolRunner(observe=observe, candidates=candidates)
    result = asyncio.run(runner.run(async_openai_client, PARAMS))
    assert result["completed_candidate_ids"] == ["refund", "refund"]
    assert refunded == [7]
    assert [r.by for r in trace.of("tool.retry")] == ["model"]


def test_without_a_fault_the_runner_runs_as_ever(http_faults: Any, openai_client: Any) -> None:
    shop = Shop()
    choose(http_faults, "refund", "done")
    result = shop.runner().run(openai_client, PARAMS)
    assert result["status"] == "unverified"
    assert shop.refunded == [7]


def test_a_test_without_the_kit_meets_the_sdk_own_runner() -> None:
    # hooked for a kit test only, and undone at its teardown, whatever ran before
    from openai.lib import _tool_lifecycle
    from openai.lib import decisions_tool_runner as module

    from pytest_agentfaults.testing._frameworks._hook import HOOKED

    assert module.invoke is _tool_lifecycle.invoke
    for owner in (DecisionsToolRunner, AsyncDecisionsToolRunner):
        assert not hasattr(vars(owner)["run"], HOOKED)
    assert not hasattr(vars(module._Run)["select"], HOOKED)


def test_a_runner_without_what_is_hooked_is_unhookable_and_left_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a future openai that no longer calls invoke(): what was hooked first is put back,
    # and the fault's message will say why the actions run unwatched
    from openai.lib import decisions_tool_runner as module

    from pytest_agentfaults.testing._frameworks import Unhookable
    from pytest_agentfaults.testing._frameworks._hook import HOOKED
    from pytest_agentfaults.testing._frameworks.openai_decisions import install

    monkeypatch.delattr(module, "invoke")
    with pytest.raises(Unhookable, match="calls no invoke"):
        install()
    for owner in (DecisionsToolRunner, AsyncDecisionsToolRunner):
        assert not hasattr(vars(owner)["run"], HOOKED)
    assert not hasattr(vars(module._Run)["select"], HOOKED)


def test_the_adapter_is_registered_for_the_runner_module_not_the_sdk() -> None:
    from pytest_agentfaults._plugin_adapters import FRAMEWORKS
    from pytest_agentfaults.testing._frameworks import ADAPTERS, FRAMEWORK_OF

    module = "openai.lib.decisions_tool_runner"
    assert ADAPTERS[module].endswith("._frameworks.openai_decisions:install")
    assert FRAMEWORK_OF[module] == "openai"  # one framework name per SDK
    assert module in FRAMEWORKS


ONLY_OPENAI = """
import sys

import openai
import pytest


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), strict=False)
def test_only_openai(trace):
    assert "openai.lib.decisions_tool_runner" not in sys.modules
"""


def test_a_test_that_imports_only_openai_installs_nothing(pytester: pytest.Pytester) -> None:
    # the adapter is keyed on the runner's module: importing the SDK loads no runner
    pytester.makepyfile(test_only_openai=ONLY_OPENAI)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


FAILING_INSIDE_A_RUN = """
import httpx
import pytest
from openai.lib import _tool_lifecycle
from openai.lib import decisions_tool_runner as module
from openai.lib.decisions_tool_runner import DecisionsToolRunner

from test_openai_decisions import PARAMS, URL, decision

ORIGINAL_RUN = vars(DecisionsToolRunner)["run"]
ORIGINAL_SELECT = vars(module._Run)["select"]


@pytest.mark.inject_fault(tool="audit", raises=ConnectionError("reset"))
def test_a_fails_inside_a_run(http_faults, openai_client):
    http_faults.post(URL).side_effect = [httpx.Response(200, json=decision("audit"))]
    candidates = [
        {"id": "audit", "description": "Audit the order", "execute": lambda: None},
        {"id": "done", "description": "Done", "done": True},
    ]
    assert vars(DecisionsToolRunner)["run"] is not ORIGINAL_RUN  # the adapter is on
    # the run stops at the faulted action, and the test does not catch it
    DecisionsToolRunner(observe=lambda: "o", candidates=lambda o: candidates).run(
        openai_client, PARAMS
    )


def test_b_after_it():
    assert vars(DecisionsToolRunner)["run"] is ORIGINAL_RUN
    assert vars(module._Run)["select"] is ORIGINAL_SELECT
    assert module.invoke is _tool_lifecycle.invoke
"""


def test_the_hooks_are_undone_after_a_test_that_failed_inside_a_run(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_inner=FAILING_INSIDE_A_RUN)
    pytester.syspathinsert(Path(__file__).parent)  # the inner test reuses this module's bodies
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*DecisionsToolRunnerError: Decision run stopped*"])


def _watched_line(message: str) -> list[str]:
    """The frameworks an unfired tool fault's message says it watched."""
    line = message.split("the fault watches the tools of: ")[1].split("\n", maxsplit=1)[0]
    return line.split(";")[0].split(", ")  # a scope's line ends "; mark it .strict(False) ..."


def test_the_runner_imported_late_is_named_though_the_sdks_other_runner_was_watched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # both runners' actions are framework "openai": the Responses runner watched from the
    # start must not pass for the Decisions runner, put in sys.modules after the scope
    # started past the import system (an import would have been watched)
    import sys

    import openai.lib.responses_tool_runner  # noqa: F401
    from openai.lib import decisions_tool_runner as module

    monkeypatch.delitem(sys.modules, module.__name__)

    def the_test(scope: Any) -> None:
        scope.faults.tool("refund").raises(ConnectionError("reset"))
        monkeypatch.setitem(sys.modules, module.__name__, module)  # it imports the runner

    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:
        the_test(scope)
    message = str(failed.value)
    assert (
        "openai.lib.decisions_tool_runner was loaded where the kit could not see it (not by "
        "an import while the test ran), so its tools were not watched"
    ) in message
    assert "openai" in _watched_line(message)  # the Responses runner's functions were


def test_an_unfired_fault_names_the_sdk_once_for_both_its_runners() -> None:
    import openai.lib.decisions_tool_runner
    import openai.lib.responses_tool_runner  # noqa: F401

    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:
        scope.faults.tool("refund").raises(ConnectionError("reset"))
    assert _watched_line(str(failed.value)).count("openai") == 1


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), times=1)
def test_an_action_is_a_coverage_row_of_the_sdk(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    from pytest_agentfaults.testing._coverage_observe import observe

    shop = Shop()
    choose(http_faults, "refund")
    with pytest.raises(DecisionsToolRunnerError):
        shop.runner().run(openai_client, PARAMS)
    observed = observe(trace.events)
    assert ["tool", "refund", "openai"] in observed["rows"]
    assert ["tool", "refund", "openai", "retryable", "injected"] in observed["hits"]


@pytest.mark.parametrize("fault_class", ["invalid_args", "unknown_tool"])
def test_what_the_kit_cannot_cover_for_an_action_says_so_with_its_exclusion(
    fault_class: str,
) -> None:
    # an action takes no arguments, and no script of the kit answers /v1/decisions: the
    # suggestion for an "openai" row must not leave the author of an action to find out
    from pytest_agentfaults.testing._coverage import Row, suggest

    suggestion = suggest(Row("tool", "refund", "openai"), fault_class)
    assert "Decisions runner" in suggestion
    assert f"agentfaults_coverage_exclude = refund (openai):{fault_class}" in suggestion


@pytest.mark.inject_fault(tool="refund", raises=asyncio.CancelledError(), times=1)
def test_a_cancelled_action_is_the_runners_cancelled_error(
    http_faults: Any, async_openai_client: Any, trace: af.Trace
) -> None:
    # the SDK's own handling of an action cancelled under it: its cancelled error, with the
    # action attempted and not completed
    from openai.lib.decisions_tool_runner import DecisionsToolRunnerCancelledError

    refunded: list[int] = []

    async def observe() -> str:
        return "order 7"

    async def refund() -> None:
        refunded.append(7)

    async def candidates(observation: Any) -> list[Any]:
        return [
            {"id": "refund", "description": "Refund order 7", "execute": refund},
            {"id": "done", "description": "The task is complete", "done": True},
        ]

    choose(http_faults, "refund")
    runner = AsyncDecisionsToolRunner(observe=observe, candidates=candidates)
    with pytest.raises(DecisionsToolRunnerCancelledError) as cancelled:
        asyncio.run(runner.run(async_openai_client, PARAMS))
    assert cancelled.value.attempted_candidate_ids == ("refund",)
    assert cancelled.value.completed_candidate_ids == ()
    assert refunded == []
    assert [e.error.type for e in trace.of("tool.error")] == ["CancelledError"]
