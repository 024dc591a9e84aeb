"""pytest_agentfaults.strategies: what each strategy yields, and how its examples shrink."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Annotated, Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from hypothesis.vendor.pretty import pretty
from pydantic import Field

import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.runtime.backoff import STRATEGIES
from pytest_agentfaults.testing._malformed import break_json
from pytest_agentfaults.testing._malformed_steps import BadToolArgs, UnknownToolCall
from pytest_agentfaults.testing.faults import HTTP_KINDS, FaultPlan, parse_marker
from pytest_agentfaults.testing.scripted import ScriptedModel
from pytest_agentfaults.testing.steps import CallTool, CallTools, Say

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return url


@af.tool
def book(city: str, nights: Annotated[int, Field(ge=1, le=14)], email: str = "") -> str:
    """Book a hotel."""
    return city


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- resilience_configs


@SETTINGS
@given(afst.resilience_configs(tools=["fetch", "book"]))
def test_resilience_configs_are_valid_configs(config: af.ResilienceConfig) -> None:
    assert isinstance(config, af.ResilienceConfig)
    assert config.strategy in STRATEGIES
    assert 0 <= config.max_retries <= 5
    assert 0 <= config.base_delay <= config.max_delay
    assert set(config.tool_overrides) <= {"fetch", "book"}
    for tool in config.tool_overrides:
        assert isinstance(config.for_tool(tool), af.ResilienceConfig)


@SETTINGS
@given(
    afst.resilience_configs(
        strategy="linear",
        max_retries=st.integers(min_value=2, max_value=3),
        max_delay=10.0,
        timeout_seconds=st.none(),
        on_exhaustion="raise",
    )
)
def test_resilience_configs_take_values_or_strategies_per_field(
    config: af.ResilienceConfig,
) -> None:
    assert config.strategy == "linear"
    assert config.max_retries in (2, 3)
    assert config.max_delay == 10.0
    assert config.base_delay <= 10.0
    assert config.timeout_seconds is None
    assert config.on_exhaustion == "raise"
    assert config.tool_overrides == {}


def test_resilience_configs_shrink_to_the_simplest_config() -> None:
    config = find(afst.resilience_configs(), lambda c: c.max_retries >= 2)
    assert config.max_retries == 2
    assert config.base_delay == 0.0
    assert config.max_delay == 0.0


# --------------------------------------------------------------------------- tool_exceptions


@SETTINGS
@given(afst.tool_exceptions(retryable=True))
def test_retryable_tool_exceptions_are_retryable(exc: BaseException) -> None:
    assert af.classify(exc).retryable


@SETTINGS
@given(afst.tool_exceptions(retryable=False))
def test_final_tool_exceptions_are_not(exc: BaseException) -> None:
    assert not af.classify(exc).retryable
    assert not isinstance(exc, af.ToolExecutionError)


def test_hard_failures_come_only_when_asked_for() -> None:
    hard = find(afst.tool_exceptions(hard=True), lambda e: isinstance(e, af.ToolExecutionError))
    assert af.classify(hard).kind == "exception"
    with pytest.raises(NoSuchExample):
        find(afst.tool_exceptions(), lambda e: isinstance(e, af.ToolExecutionError))


def test_tool_exceptions_are_new_instances_and_shrink_to_a_connection_error() -> None:
    first = find(afst.tool_exceptions(), lambda e: True)
    assert type(first) is ConnectionError
    again = find(afst.tool_exceptions(), lambda e: True)
    assert again is not first


# --------------------------------------------------------------------------- http_faults


@SETTINGS
@given(afst.http_faults(url="https://api.openai.com/v1/chat/completions", method="POST"))
def test_http_faults_are_marker_kwargs_the_plugin_accepts(spec: dict[str, Any]) -> None:
    fault = parse_marker((), spec)
    assert fault.target == "http"
    assert spec["url"] == "https://api.openai.com/v1/chat/completions"
    assert spec["method"] == "POST"
    if isinstance(spec["http"], int):
        assert fault.status == spec["http"]
    else:
        assert spec["http"] in HTTP_KINDS
    assert "retry_after" not in spec or spec["http"] == 429
    assert 1 <= spec.get("times", 1) <= 3
    plan = FaultPlan()
    plan.add(fault)
    assert plan.of("http") == [fault]


def test_http_faults_shrink_to_a_bare_503() -> None:
    assert find(afst.http_faults(), lambda spec: True) == {"http": 503}
    rate_limited = find(afst.http_faults(), lambda s: "retry_after" in s)
    assert rate_limited == {"http": 429, "retry_after": 1.0}


@SETTINGS
@given(afst.http_faults(statuses=[], kinds=["timeout", "reset"], max_times=1))
def test_http_faults_can_be_narrowed(spec: dict[str, Any]) -> None:
    assert spec["http"] in ("timeout", "reset")
    assert "times" not in spec


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"statuses": [99]}, "not an HTTP status"),
        ({"kinds": ["boom"]}, "unknown kind 'boom'"),
        ({"statuses": [], "kinds": []}, "both empty"),
        ({"max_times": 0}, "max_times"),
    ],
)
def test_http_faults_reject_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(af.UsageError, match=message):
        afst.http_faults(**kwargs)


# --------------------------------------------------------------------------- malformed_json


@settings(SETTINGS, max_examples=200)
@given(afst.malformed_json())
def test_malformed_json_never_parses(text: str) -> None:
    assert not parses(text)


@pytest.mark.parametrize("kind", afst.MALFORMED_JSON_KINDS)
def test_every_kind_breaks_a_document_it_applies_to(kind: str) -> None:
    document = {"query": "weather in Paris", "limit": 5, "cursor": None, "strict": True}

    @SETTINGS
    @given(afst.malformed_json(from_=document, kinds=[kind]))
    def check(text: str) -> None:
        assert not parses(text)
        assert text != json.dumps(document)

    check()


@SETTINGS
@given(afst.malformed_json(from_=st.lists(st.integers(), min_size=2, max_size=4)))
def test_malformed_json_takes_a_strategy_of_documents(text: str) -> None:
    assert not parses(text)


@SETTINGS
@given(afst.malformed_json(from_=st.one_of(st.integers(), st.floats(), st.none(), st.text())))
def test_malformed_json_breaks_scalars_too(text: str) -> None:
    assert not parses(text)


def test_malformed_json_shrinks_to_a_truncated_object() -> None:
    assert find(afst.malformed_json(), lambda text: True) == "{"
    fenced = find(afst.malformed_json(kinds=["markdown_fence"]), lambda text: True)
    assert fenced == "```json\n{}\n```"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("truncated", '{"a": "b"'),
        ("trailing_comma", '{"a": "b", "c": [1, null,],}'),
        ("single_quotes", "{'a': 'b', 'c': [1, null]}"),
        ("unquoted_keys", '{a: "b", c: [1, null]}'),
        ("python_literals", "{'a': 'b', 'c': [1, None]}"),
        ("missing_comma", '{"a": "b" "c": [1 null]}'),
        ("undefined", '{"a": "b", "c": [1, undefined]}'),
        ("unbalanced", '{"a": "b", "c": [1, null]}}'),
        ("comment", '/* arguments */ {"a": "b", "c": [1, null]} // end'),
        ("markdown_fence", '```json\n{"a": "b", "c": [1, null]}\n```'),
        ("prose", 'Here is the JSON you asked for: {"a": "b", "c": [1, null]}'),
        ("unescaped_quote", '{"a": "b", "c": [1, null], "note": "the user said "hurry" twice"}'),
        ("two_objects", '{"a": "b", "c": [1, null]} {"a": "b"}'),
    ],
)
def test_each_kind_breaks_a_document_recognisably(kind: str, expected: str) -> None:
    # The construction under the strategy, with the truncation cut at character 9.
    assert break_json(kind, {"a": "b", "c": [1, None]}, cut=8) == expected
    assert not parses(expected)


def test_malformed_json_rejects_what_it_cannot_use() -> None:
    with pytest.raises(af.UsageError, match="kinds"):
        afst.malformed_json(kinds=["nan"])
    with pytest.raises(af.UsageError, match="not JSON-able"):
        afst.malformed_json(from_={"when": object()})
    with pytest.raises(af.UsageError, match="none of these kinds"):
        afst.malformed_json(from_={"a": 1}, kinds=["undefined"])


# --------------------------------------------------------------------------- scripts


@SETTINGS
@given(afst.scripts(tools=[fetch, book, "ping"]))
def test_scripts_end_with_an_answer_and_call_tools_validly(steps: list[Any]) -> None:
    assert isinstance(steps[-1], Say)
    assert not any(isinstance(step, Say) for step in steps[:-1])
    assert len(steps) <= 5
    tools = {"fetch": fetch, "book": book}
    calls = [c for s in steps for c in (s.calls if isinstance(s, CallTools) else (s,))]
    for call in calls:
        if isinstance(call, CallTool) and call.name in tools:
            tools[call.name].validate(call.arguments)
        elif isinstance(call, CallTool):
            assert call.name == "ping"
            assert call.arguments == "{}"
        elif isinstance(call, UnknownToolCall):
            assert call.name not in ("fetch", "book", "ping")
        elif isinstance(call, BadToolArgs):
            assert call.tool in ("fetch", "book", "ping")
            assert not parses(call.raw)
    ScriptedModel(steps, strict=False)  # a valid script (only built, never run)


@SETTINGS
@given(afst.scripts(tools=[fetch], failures=False, bad_calls=False, min_steps=2, max_steps=3))
def test_scripts_can_be_calls_only(steps: list[Any]) -> None:
    assert 3 <= len(steps) <= 4
    assert all(isinstance(step, CallTool | CallTools) for step in steps[:-1])


@SETTINGS
@given(afst.scripts(final="The answer is 42."))
def test_scripts_without_tools_only_fail_and_answer(steps: list[Any]) -> None:
    assert steps[-1] == af.say("The answer is 42.")
    assert not any(isinstance(step, CallTool | CallTools | BadToolArgs) for step in steps)


def test_scripts_shrink_to_one_call_and_an_answer() -> None:
    steps = find(afst.scripts(tools=[fetch]), lambda s: any(isinstance(x, CallTool) for x in s))
    assert len(steps) == 2
    assert isinstance(steps[0], CallTool)
    assert steps[0].name == "fetch"
    assert steps[1] == af.say("done")
    assert pretty(steps) == f"[{steps[0]!r}, say('done')]"  # constructors, not dataclass fields
    assert pretty(steps[0]).startswith("call_tool('fetch', '{\"url\": \"http")
    assert find(afst.scripts(tools=[fetch]), lambda s: True) == [af.say("done")]


def test_scripts_reject_bad_arguments() -> None:
    with pytest.raises(af.UsageError, match="tool names, af.Tool objects or other frameworks'"):
        afst.scripts(tools=[42])  # type: ignore[list-item]
    with pytest.raises(af.UsageError, match="min > max"):
        afst.scripts(min_steps=3, max_steps=2)
    with pytest.raises(af.UsageError, match="switched off"):
        afst.scripts(min_steps=1, failures=False, bad_calls=False)


# --------------------------------------------------------------------------- fault_plans


@SETTINGS
@given(afst.fault_plans(tools=["fetch", "book"], http=True, max_faults=4, max_times=2))
def test_fault_plans_are_fresh_plans_on_the_given_targets(plan: FaultPlan) -> None:
    assert isinstance(plan, FaultPlan)
    assert plan.fired == []
    assert len(plan.faults) <= 4
    for fault in plan.faults:
        assert fault.target in ("tool", "llm", "http")
        assert 1 <= fault.times <= 2
        assert 1 <= fault.at <= 3
        assert not fault.strict
        if fault.target == "tool":
            assert fault.tool in ("fetch", "book")
            assert fault.action in ("raises", "returns", "delay")
            fault.check()


@SETTINGS
@given(afst.fault_plans(tools=[], llm=False, http=True, min_faults=1, max_faults=2))
def test_fault_plans_http_faults_name_a_call_that_exists(plan: FaultPlan) -> None:
    # Reports and messages show a fault's source: it was "@pytest.mark.http_faults(...)",
    # a marker that does not exist. The call that adds the same fault is shown instead.
    assert plan.of("http")
    for fault in plan.of("http"):
        assert fault.source.startswith("faults.inject_fault(http="), fault.source


@SETTINGS
@given(afst.fault_plans(tools=["fetch"], llm=["rate_limit", "timeout"], min_faults=2))
def test_fault_plans_take_the_llm_kinds_named(plan: FaultPlan) -> None:
    assert len(plan.faults) >= 2
    assert all(f.kind in ("rate_limit", "timeout") for f in plan.of("llm"))
    assert plan.of("http") == []


@SETTINGS
@given(afst.fault_plans(llm=True))
def test_fault_plans_without_tools_leave_out_malformed_tool_args(plan: FaultPlan) -> None:
    assert plan.of("tool") == []
    assert all(getattr(f, "kind", None) != "malformed_tool_args" for f in plan.faults)


@SETTINGS
@given(afst.fault_plans(tools=["fetch"], llm=False, probability=True, min_faults=1))
def test_fault_plans_may_draw_seeded_probabilities(plan: FaultPlan) -> None:
    assert plan.seed == 0
    assert all(f.probability in (None, 0.25, 0.5, 0.75) for f in plan.faults)


def test_probabilities_are_drawn_only_when_asked_for() -> None:
    plan = find(
        afst.fault_plans(tools=["fetch"], llm=False, probability=True),
        lambda p: any(f.probability is not None for f in p.faults),
    )
    printed = pretty(plan)
    # The drawn probability prints as the fluent call that sets it. Whether the shrunk
    # plan keeps a fault without one before it is the shrinker's choice, and it differs
    # between Hypothesis releases (6.107, our floor, keeps one; 6.170 does not).
    assert printed.startswith("FaultPlan(seed=0, strict=False, faults=[\n    tool('fetch')")
    assert printed.endswith(
        "tool('fetch').raises(ConnectionError('connection reset by peer')).probability(0.25)])"
    )
    with pytest.raises(NoSuchExample):
        find(
            afst.fault_plans(tools=["fetch"], llm=False),
            lambda p: any(f.probability is not None for f in p.faults),
        )


def test_fault_plans_reject_bad_arguments() -> None:
    with pytest.raises(af.UsageError, match="unknown kinds"):
        afst.fault_plans(llm=["meteor"])
    with pytest.raises(af.UsageError, match="max_times"):
        afst.fault_plans(max_times=0)
    with pytest.raises(af.UsageError, match="min > max"):
        afst.fault_plans(min_faults=4, max_faults=3)
    with pytest.raises(af.UsageError, match="no kind of fault"):
        afst.fault_plans(llm=False, min_faults=1)
    with pytest.raises(af.UsageError, match="need a fixed seed"):
        afst.fault_plans(probability=True, seed=None)


def test_a_shrunk_plan_prints_as_the_builder_calls_that_make_it() -> None:
    plan = find(afst.fault_plans(tools=["fetch"]), lambda p: len(p.of("tool")) >= 2)
    shown = pretty(plan)
    assert shown == (
        "FaultPlan(seed=0, strict=False, faults=[\n"
        "    tool('fetch').raises(ConnectionError('connection reset by peer')),\n"
        "    tool('fetch').raises(ConnectionError('connection reset by peer'))])"
    )
    assert pretty(find(afst.fault_plans(), lambda p: True)) == "FaultPlan(seed=0, faults=[])"


def test_a_plan_prints_every_option() -> None:
    plan = FaultPlan(seed=4)
    plan.tool("fetch").delay(90).times(2).at(3)
    plan.llm.rate_limit(retry_after=2).strict(False)
    plan.llm.malformed("tool_args")
    plan.llm.malformed("tool_args", name="fetch", args='{"url": ').strict(False)
    plan.http(url="https://x.test/v1", method="post").status(429, retry_after=1)
    plan.http().timeout().probability(0.5)
    shown = pretty(plan)
    for expected in (
        "FaultPlan(seed=4, faults=[",
        "tool('fetch').delay(90.0).times(2).at(3)",
        "llm.rate_limit(retry_after=2).strict(False)",
        "llm.malformed('tool_args')",
        "llm.malformed('tool_args', name='fetch', args='{\"url\": ').strict(False)",
        "http(url='https://x.test/v1', method='POST').status(429, retry_after=1.0)",
        "http().timeout().probability(0.5)",
    ):
        assert expected in shown


# --------------------------------------------------------------------------- layering


LAYERS = """
import json, sys
seen = []
def snapshot():
    seen.append(sorted({name.split(".")[0] for name in sys.modules}))
import pytest_agentfaults.testing.schedules; snapshot()
import pytest_agentfaults.fakes; snapshot()
import pytest_agentfaults.strategies; snapshot()
print(json.dumps(seen))
"""


def test_each_module_loads_only_its_own_heavy_dependency() -> None:
    # Without other packages' Hypothesis plugins, which `import hypothesis` loads: trio's
    # (in the test extra) imports trio.testing, and with it pytest; theirs, not ours.
    env = {**os.environ, "HYPOTHESIS_NO_PLUGINS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", LAYERS], check=True, capture_output=True, text=True, env=env
    ).stdout
    schedules, fakes, strategies = (set(loaded) for loaded in json.loads(out))
    never = {"pytest", "_pytest", "respx"}
    assert not schedules & {"hypothesis", "faker", *never}
    assert "faker" in fakes
    assert not fakes & {"hypothesis", *never}
    assert "hypothesis" in strategies
    assert not strategies & never


# A single name where a list is taken is one name, not its letters: a plan on the tools
# "f", "e", "t" ... never meets "fetch", and a property test would pass without a word.


@settings(max_examples=25)
@given(afst.fault_plans(tools="fetch", llm=False, min_faults=1))
def test_fault_plans_take_one_tool_name_as_one_tool(plan: FaultPlan) -> None:
    assert {fault.tool for fault in plan.faults} == {"fetch"}  # type: ignore[union-attr]


@settings(max_examples=25)
@given(afst.fault_plans(tools=(), llm="rate_limit", min_faults=1))
def test_fault_plans_take_one_llm_kind_as_one_kind(plan: FaultPlan) -> None:
    assert {fault.kind for fault in plan.faults} == {"rate_limit"}  # type: ignore[union-attr]


@settings(max_examples=25)
@given(afst.scripts(tools="fetch", min_steps=1, bad_calls=False, failures=False))
def test_scripts_take_one_tool_name_as_one_tool(steps: list[Any]) -> None:
    called = {
        name
        for step in steps
        if isinstance(step, CallTool | CallTools)
        for name in ([step.name] if isinstance(step, CallTool) else [c.name for c in step.calls])
    }
    assert called <= {"fetch"}


@settings(max_examples=10)
@given(afst.http_faults(statuses=503, kinds="timeout"))
def test_http_faults_take_one_status_and_one_kind(spec: dict[str, Any]) -> None:
    assert spec["http"] in (503, "timeout")


@settings(max_examples=10)
@given(afst.malformed_json(kinds="prose"))
def test_malformed_json_takes_one_kind(raw: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
