"""Declaring faults on a plan, outside pytest: bad tool names, and function targets that
are patched only while the plan is active and say so when they never fired."""

from __future__ import annotations

import contextvars
import sys
import types

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.hooks import active_interceptors
from pytest_agentfaults.testing import FaultPlan
from pytest_agentfaults.testing.faults import current_plan


@pytest.mark.parametrize("name", ["", 3])
def test_a_tool_fault_needs_a_tool_name(name):
    with pytest.raises(UsageError) as caught:
        FaultPlan().tool(name)  # type: ignore[arg-type]
    assert str(caught.value) == f"faults.tool(name): give a tool name, got {name!r}"


@pytest.fixture
def helpers():
    module = types.ModuleType("agentfaults_declared_helpers")

    def lookup(key: str) -> str:
        return f"value of {key}"

    module.lookup = lookup  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        del sys.modules[module.__name__]


def test_a_function_fault_patches_only_while_its_plan_is_active(helpers):
    original = helpers.lookup
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    assert helpers.lookup is original  # declared, not yet active: untouched
    with plan.active(), pytest.raises(ConnectionError, match="down"):
        helpers.lookup("k")
    assert helpers.lookup is original
    assert helpers.lookup("k") == "value of k"


def test_a_function_fault_declared_on_an_active_plan_is_patched_at_once(helpers):
    plan = FaultPlan()
    with plan.active():
        plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
        with pytest.raises(ConnectionError):
            helpers.lookup("k")
    assert helpers.lookup("k") == "value of k"


def test_an_unfired_function_fault_names_its_declaration_and_the_patched_path(helpers):
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    message = _unfired_message(plan)
    assert "faults.function('agentfaults_declared_helpers:lookup')" in message
    assert "agentfaults_declared_helpers:lookup was not called through that path" in message
    assert "from agentfaults_declared_helpers import lookup" in message


def test_a_function_fault_declared_on_an_active_plan_names_its_declaration_when_unresolvable():
    plan = FaultPlan()
    with plan.active():
        with pytest.raises(UsageError) as caught:
            plan.function("agentfaults_no_such_module:lookup")
        assert plan.faults == []  # nothing half-declared
    assert str(caught.value).startswith(
        "faults.function('agentfaults_no_such_module:lookup'): cannot import module "
        "'agentfaults_no_such_module'"
    )


def _unfired_message(plan: FaultPlan) -> str:
    with plan.active():
        pass
    with pytest.raises(AssertionError) as caught:
        plan.check()
    return str(caught.value)


def test_an_unfired_tool_fault_says_whose_tools_were_watched():
    plan = FaultPlan()
    plan.tool("search").raises(ConnectionError("down"))
    assert _unfired_message(plan).endswith("\n  the fault watches the tools of: af.Agent")


def test_an_unfired_tool_fault_lists_every_framework_the_plugin_watched():
    plan = FaultPlan()
    # as the plugin sets it: the module of every framework with an adapter (a framework of
    # the process left out would be named as imported after the test started), named as
    # their events name them, each once (the openai SDK's two runners are both "openai")
    from pytest_agentfaults.testing._frameworks import ADAPTERS, FRAMEWORK_OF

    plan.framework_state["watched"] = ["agentfaults", *ADAPTERS]
    frameworks = list(dict.fromkeys(FRAMEWORK_OF[module] for module in ADAPTERS))
    plan.tool("search").raises(ConnectionError("down"))
    assert _unfired_message(plan).endswith(
        "\n  the fault watches the tools of: af.Agent, " + ", ".join(frameworks)
    )
    assert "anthropic, google_genai, openai" in _unfired_message(plan)
    assert _unfired_message(plan).count("openai, ") == 0  # named once, last


def test_an_unfired_llm_fault_says_nothing_of_tools():
    plan = FaultPlan()
    plan.llm.rate_limit()
    message = _unfired_message(plan)
    assert "watched" not in message
    assert message.endswith(", or add .strict(False) if the fault may go unused")


def test_a_failing_end_of_test_check_hides_the_kits_frame_from_the_traceback():
    plan = FaultPlan()
    plan.tool("search").raises(ConnectionError("down"))
    with plan.active():
        pass
    with pytest.raises(AssertionError) as caught:
        plan.check()
    raised_in = caught.traceback[-1]  # the frame that raised: the plan's check
    assert raised_in.path.name == "faults.py"
    assert raised_in.ishidden(caught)  # pytest leaves it out of a failed test's report


def test_the_end_of_test_check_reports_an_unrequested_route_with_the_unfired_faults():
    plan = FaultPlan()
    plan.tool("search").raises(ConnectionError("down"))
    with plan.active():
        plan.http_layer().router.get("https://api.test/users").respond(200)
    with pytest.raises(AssertionError) as caught:
        plan.check()
    first, *rest = str(caught.value).splitlines()
    assert first == (
        "fault on tool 'search' never fired: faults.tool('search').raises(ConnectionError('down'))"
    )
    assert "agentfaults: 1 http_faults route(s) registered but never requested:" in rest
    assert "  GET https://api.test/users" in rest


def test_a_plan_switched_off_from_another_context_is_no_longer_current_there():
    plan = FaultPlan()

    def activate_here_switch_off_elsewhere() -> object:
        handle = plan.activate()
        elsewhere = contextvars.copy_context()  # a fixture torn down in another context

        def switch_off() -> object:
            plan.deactivate(handle)
            return current_plan()

        return elsewhere.run(switch_off)

    # a context of its own: what this context keeps switched on ends with it
    assert contextvars.Context().run(activate_here_switch_off_elsewhere) is None


def test_a_plan_that_fails_to_switch_on_leaves_nothing_switched_on(helpers):
    original, before, interceptors = helpers.lookup, current_plan(), active_interceptors()
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    plan.function("agentfaults_no_such_module:lookup").raises(ConnectionError("down"))
    with pytest.raises(UsageError, match="agentfaults_no_such_module"):
        plan.activate()  # the user's mistake, not a failure of the undo
    assert current_plan() is before
    assert active_interceptors() == interceptors
    assert helpers.lookup is original


def test_a_plan_switched_on_twice_stays_on_until_its_outer_block_ends(helpers):
    before = current_plan()
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    with plan.active():
        with plan.active():
            pass
        assert current_plan() is plan
        with pytest.raises(ConnectionError, match="down"):
            helpers.lookup("k")
    assert current_plan() is before
    assert helpers.lookup("k") == "value of k"


# ---------------------------------------------------------------------------- fluent misuse
# Each of these once let a test pass (or fail far from the mistake) while the fault it
# declared did something else than it said.


def test_a_tool_fault_takes_the_tool_itself():
    import pytest_agentfaults as af

    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    assert FaultPlan().tool(fetch).raises(ConnectionError).fault.tool == "fetch"


@pytest.mark.parametrize("value", [ConnectionError("reset"), ConnectionError, TimeoutError])
def test_returns_an_exception_is_refused_and_points_at_raises(value):
    with pytest.raises(UsageError) as caught:
        FaultPlan().tool("fetch").returns(value)
    assert f"use raises={value!r}" in str(caught.value)
    assert str(caught.value).startswith("faults.tool('fetch'): returns=")


def test_returns_the_tool_failure_class_asks_for_an_instance():
    import pytest_agentfaults as af

    with pytest.raises(UsageError, match=r"returns=af\.ToolFailure\(error="):
        FaultPlan().tool("fetch").returns(af.ToolFailure)


@pytest.mark.parametrize(
    ("first", "second"),
    [("raises", "returns"), ("returns", "delay"), ("delay", "raises")],
)
def test_a_second_action_on_one_fault_is_refused(first, second):
    arguments = {"raises": ConnectionError, "returns": "page", "delay": 1.0}
    builder = getattr(FaultPlan().tool("fetch"), first)(arguments[first])
    with pytest.raises(UsageError, match=rf"\.{second}\(\) after \.{first}\(\)"):
        getattr(builder, second)(arguments[second])


def test_strict_takes_a_bool_only():
    with pytest.raises(UsageError, match=r"strict\(\) takes True or False, got 'false'"):
        FaultPlan().tool("fetch").raises(ConnectionError).strict("false")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "written"), [({"foo": 1}, "foo=1"), ({"args": 123}, "args=123")]
)
def test_an_llm_fault_is_checked_when_declared(options, written):
    with pytest.raises(UsageError, match=rf"^faults\.llm\.malformed\('tool_args', {written}\): "):
        FaultPlan().llm.malformed("tool_args", **options)


@pytest.mark.parametrize(("key", "value"), [("method", 5), ("url", b"/v1")])
def test_an_http_fault_needs_str_url_and_method(key, value):
    with pytest.raises(UsageError, match=rf"faults\.http\({key}="):
        FaultPlan().http(**{key: value})


def test_an_unfinished_fault_says_so_at_the_check_not_never_fired():
    plan = FaultPlan()
    plan.tool("fetch")
    with pytest.raises(AssertionError) as caught:
        plan.check()
    assert "says nothing to inject" in str(caught.value)
    assert "never fired" not in str(caught.value)


def test_an_unfinished_fault_met_by_a_run_raises_its_usage_error_unwrapped():
    import pytest_agentfaults as af
    from pytest_agentfaults import ScriptedModel, call_tool, say

    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    plan = FaultPlan()
    with plan.active():
        plan.tool("fetch")
        model = ScriptedModel([call_tool("fetch", url="u"), say("ok")])
        with pytest.raises(UsageError, match="says nothing to inject"):
            af.Agent("bot", model=model, tools=[fetch]).run("go")


def test_an_unfired_fluent_fault_is_shown_as_the_whole_call_the_test_wrote():
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError).times(2)
    plan.tool("fetch").returns("cached").at(3).strict()
    plan.llm.server_error().times(2)
    plan.llm.rate_limit(retry_after=2)
    plan.http(url="https://api.example.com/v1").status(503, retry_after=1)
    with pytest.raises(AssertionError) as caught:
        plan.check()
    headers = [line for line in str(caught.value).splitlines() if "never fired" in line]
    assert [line.split(" never fired: ")[1] for line in headers] == [
        "faults.tool('fetch').raises(ConnectionError).times(2)",
        "faults.tool('fetch').returns('cached').at(3).strict()",
        "faults.llm.server_error().times(2)",
        "faults.llm.rate_limit(retry_after=2)",
        "faults.http(url='https://api.example.com/v1').status(503, retry_after=1)",
    ]


def test_a_marker_fault_is_shown_as_the_marker_alone():
    from pytest_agentfaults.testing._marker import parse_marker

    fault = parse_marker((), {"http": 503, "retry_after": 1, "times": 2})
    assert fault.written == "@pytest.mark.inject_fault(http=503, retry_after=1, times=2)"
