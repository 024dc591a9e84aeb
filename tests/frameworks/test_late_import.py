"""A framework first imported inside a kit test is watched from the moment it arrives.

The adapters used to hook only the frameworks imported when the test started. A suite
that imports its app (and with it pydantic-ai, LangChain...) inside the test body got a
fault that never fired in whichever such test ran first, and a pass in the others: the
outcome hung on the order (pytest-randomly's order, an -x run, a single test picked
out). Each inner session runs in a fresh process, where the framework is not imported
until the test imports it.
"""

from __future__ import annotations

import pytest

APP = """
def build():
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"got {last.content}")])
        return ModelResponse(parts=[ToolCallPart("search", {"q": "x"})])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain(retries=3)
    def search(q: str) -> str:
        return "found"

    return agent
"""

LATE = """
import sys

import pytest
from pydantic_ai_late_app import build  # imports nothing of pydantic-ai yet


@pytest.mark.inject_fault(tool="search", raises=TimeoutError("slow"))
def test_first(trace):
    assert "pydantic_ai" not in sys.modules  # it arrives below, inside the test
    with pytest.raises(TimeoutError):
        build().run_sync("go")
    assert trace.tool_attempts("search") == 1
    assert trace.of("tool.error")[0].field("framework") == "pydantic_ai"


@pytest.mark.inject_fault(tool="search", raises=TimeoutError("slow"))
def test_second(trace):
    with pytest.raises(TimeoutError):
        build().run_sync("go")


@pytest.mark.inject_fault(tool="search", returns="faked")
def test_returns(trace):
    assert build().run_sync("go").output == "got faked"
"""


@pytest.fixture
def late(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(pydantic_ai_late_app=APP, test_late=LATE)
    return pytester


def test_a_framework_imported_in_the_test_body_is_watched_whatever_the_order(late):
    for order in (["test_late.py::test_first", "test_late.py::test_second"], ["test_late.py"]):
        result = late.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *order)
        result.assert_outcomes(passed=len(order) if len(order) > 1 else 3)


def test_the_watch_ends_with_the_test_and_leaves_nothing_behind(late):
    late.makeconftest(
        """
import sys

import pytest

BEFORE = list(sys.meta_path)

@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_protocol(item):
    result = yield
    assert sys.meta_path == BEFORE, sys.meta_path  # the watch is gone after each test
    return result
"""
    )
    late.makepyfile(
        test_after="""
import sys

def test_unrelated_import_after_the_kit_tests():
    import pydantic_ai.models.test  # no kit here: nothing of ours on the path
    assert "pydantic_ai" in sys.modules

def test_no_framework_ever_imported(trace):
    assert "langchain_core" not in sys.modules
"""
    )
    result = late.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "test_late.py", "test_after.py"
    )
    result.assert_outcomes(passed=5)


def test_a_framework_loaded_past_the_import_system_is_named_as_not_watched():
    # Only a module made by hand (not by an import) escapes the watch: the message says so
    import pydantic_ai  # noqa: F401 - in sys.modules, as such a module would be

    from pytest_agentfaults.testing._frameworks import ADAPTERS, imported_late, not_watched

    assert "pydantic_ai" in imported_late(["agentfaults"])
    message = not_watched(["agentfaults"])
    assert "pydantic_ai" in message
    assert "loaded where the kit could not see it (not by an import while the test ran)" in message
    assert "import it at the top of the test module (or in conftest.py)" in message
    assert not_watched(["agentfaults", *ADAPTERS]) == ""  # every adapter hooked
    assert not_watched(None) == ""
