"""`tool=` faults reach LangChain tools and LangGraph's ToolNode: the real libraries, no mocks.

A fault stands in for one attempt LangChain makes at the tool, inside `BaseTool.run` /
`arun`: LangChain's own recovery (``handle_tool_error``, ``with_retry``, the callbacks,
``ToolNode``'s ``handle_tool_errors``, a LangGraph ``RetryPolicy``) is what these tests see.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForToolRun
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException, tool
from langgraph.errors import NodeTimeoutError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import RetryPolicy

import pytest_agentfaults as af
from pytest_agentfaults.testing._frameworks.langchain import install


def make_search(ran: list[str]) -> StructuredTool:
    @tool
    def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    return search  # type: ignore[return-value]


def make_async_search(ran: list[str]) -> StructuredTool:
    @tool
    async def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    return search  # type: ignore[return-value]


class Search(BaseTool):
    """A hand-written tool: `_run` and `_arun` of its own, and the run manager."""

    name: str = "search"
    description: str = "Search the web."
    ran: list[str]

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        assert run_manager is not None  # LangChain still hands the tool its run manager
        self.ran.append(f"sync {query}")
        return f"results for {query}"

    async def _arun(self, query: str, run_manager: Any = None) -> str:
        assert run_manager is not None
        self.ran.append(f"async {query}")
        return f"results for {query}"


class SyncOnlySearch(BaseTool):
    """Only `_run`: `ainvoke` runs it in an executor thread, which is still one attempt."""

    name: str = "search"
    description: str = "Search the web."
    ran: list[str]

    def _run(self, query: str) -> str:
        self.ran.append(query)
        return f"results for {query}"


def call(name: str = "search", call_id: str = "call_1", **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


def tool_graph(node: ToolNode, retry: RetryPolicy | None = None) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node, retry_policy=retry)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def asked(*calls: dict[str, Any]) -> dict[str, Any]:
    """A graph input: the model's turn asking for ``calls``."""
    tool_calls = [{k: v for k, v in c.items() if k != "type"} for c in calls]
    return {"messages": [AIMessage(content="", tool_calls=tool_calls)]}


class Seen(BaseCallbackHandler):
    """The tool callbacks LangChain fires, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.events.append("start")

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.events.append("end")

    def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        self.events.append(f"error {type(error).__name__}")


# ---------------------------------------------------------------- raises=, retried by LangChain


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_with_retry_retries_the_faulted_attempts_then_the_tool_runs(trace: af.Trace) -> None:
    ran: list[str] = []
    search = make_search(ran).with_retry(stop_after_attempt=3, wait_exponential_jitter=False)

    assert search.invoke({"query": "docs"}) == "results for docs"

    assert ran == ["docs"]  # the two faulted attempts never reached the function
    assert trace.tool_attempts("search") == 3
    assert trace.retries("search") == 2
    trace.assert_sequence(["tool.fault", "tool.fault", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"langchain"}
    assert [e.attempt for e in trace.of("tool.call")] == [1, 2, 3]
    assert trace.of("tool.call")[0].detail == '{"query": "docs"}'
    assert [str(e.error) for e in trace.of("tool.error")] == ["ConnectionError: reset"] * 2


def test_the_fluent_form_and_the_callbacks_see_a_real_tool_error(
    faults: af.FaultPlan, trace: af.Trace
) -> None:
    faults.tool("search").raises(TimeoutError("slow backend")).times(1)
    seen = Seen()
    search = make_search([])

    with pytest.raises(TimeoutError, match="slow backend"):
        search.invoke({"query": "docs"}, config={"callbacks": [seen]})
    assert search.invoke({"query": "docs"}, config={"callbacks": [seen]}) == "results for docs"

    assert seen.events == ["start", "error TimeoutError", "start", "end"]
    assert trace.tool_attempts("search") == 2
    assert len(faults.fired) == 1


@pytest.mark.inject_fault(tool="search", raises=ToolException("rate limited"), times=1)
def test_handle_tool_error_turns_a_raised_tool_exception_into_the_message(
    trace: af.Trace,
) -> None:
    search = make_search([])
    search.handle_tool_error = True

    message = search.invoke(call(query="docs"))
    again = search.invoke(call(query="docs", call_id="call_2"))

    assert isinstance(message, ToolMessage)
    assert (message.content, message.status) == ("rate limited", "error")
    assert (again.content, again.status) == ("results for docs", "success")
    trace.assert_sequence("tool.fault", "tool.error", "tool.call", "tool.result")


# ---------------------------------------------------------------- returns=


@pytest.mark.inject_fault(
    tool="search",
    returns=af.ToolFailure(error="No results", recommendations=["Try a broader query"]),
)
def test_a_tool_failure_is_raised_as_a_tool_exception(trace: af.Trace) -> None:
    search = make_search([])
    with pytest.raises(ToolException, match="No results") as raised:
        search.invoke({"query": "docs"})
    assert str(raised.value) == "No results Recommendations: Try a broader query"
    assert trace.errors("search")[0].error.type == "ToolFailure"


@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="No results"))
def test_a_tool_failure_goes_through_handle_tool_error(trace: af.Trace) -> None:
    ran: list[str] = []
    search = make_search(ran)
    search.handle_tool_error = lambda e: f"the tool said: {e}"

    message = search.invoke(call(query="docs"))

    assert (message.content, message.status) == ("the tool said: No results", "error")
    assert ran == []
    trace.assert_sequence("tool.call", "tool.fault", "tool.error")


@pytest.mark.inject_fault(tool="search", returns="cached page")
def test_returns_a_value_in_place_of_the_tool(trace: af.Trace) -> None:
    ran: list[str] = []
    message = make_search(ran).invoke(call(query="docs"))
    assert (message.content, message.status) == ("cached page", "success")
    assert ran == []
    assert trace.of("tool.result")[0].detail == "cached page"


@pytest.mark.inject_fault(tool="search", delay=30)
def test_delay_moves_the_virtual_clock_then_the_tool_runs(
    virtual_clock: af.VirtualClock,
) -> None:
    ran: list[str] = []
    assert make_search(ran).invoke({"query": "docs"}) == "results for docs"
    assert ran == ["docs"]
    assert virtual_clock.now() == 30


# ---------------------------------------------------------------- BaseTool subclasses, async


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), at=1)
def test_a_base_tool_subclass_sync(trace: af.Trace) -> None:
    search = Search(ran=[], handle_tool_error=True)
    with pytest.raises(ConnectionError):  # not a ToolException: handle_tool_error passes it on
        search.invoke({"query": "a"})
    assert search.invoke({"query": "b"}) == "results for b"
    assert search.ran == ["sync b"]
    assert trace.tool_attempts("search") == 2


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), at=1)
async def test_a_base_tool_subclass_async(trace: af.Trace) -> None:
    search = Search(ran=[])
    with pytest.raises(ConnectionError):
        await search.ainvoke({"query": "a"})
    assert await search.ainvoke({"query": "b"}) == "results for b"
    assert search.ran == ["async b"]
    trace.assert_sequence("tool.fault", "tool.error", "tool.call", "tool.result")


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
async def test_a_sync_tool_run_async_is_one_attempt_not_two(trace: af.Trace) -> None:
    tool_ = SyncOnlySearch(ran=[])
    search = tool_.with_retry(stop_after_attempt=2, wait_exponential_jitter=False)
    assert await search.ainvoke({"query": "q"}) == "results for q"
    assert tool_.ran == ["q"]
    assert trace.tool_attempts("search") == 2
    trace.assert_sequence("tool.fault", "tool.result")


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_an_async_tool_function_retried_async(trace: af.Trace) -> None:
    ran: list[str] = []
    search = make_async_search(ran).with_retry(stop_after_attempt=3, wait_exponential_jitter=False)
    assert await search.ainvoke({"query": "docs"}) == "results for docs"
    assert ran == ["docs"]
    assert trace.tool_attempts("search") == 3


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="quota"))
async def test_a_tool_failure_async(trace: af.Trace) -> None:
    search = make_async_search([])
    search.handle_tool_error = True
    message = await search.ainvoke(call(query="docs"))
    assert (message.content, message.status) == ("quota", "error")


# ---------------------------------------------------------------- LangGraph's ToolNode


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_tool_node_turns_the_fault_into_an_error_message(trace: af.Trace) -> None:
    ran: list[str] = []
    app = tool_graph(ToolNode([make_search(ran)], handle_tool_errors=True))

    first = app.invoke(asked(call(query="a")))["messages"][-1]
    second = app.invoke(asked(call(query="b")))["messages"][-1]

    assert first.status == "error"
    assert first.content == "Error: ConnectionError('reset')\n Please fix your mistakes."
    assert (second.status, second.content) == ("success", "results for b")
    assert ran == ["b"]
    assert trace.tool_attempts("search") == 2


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_a_retry_policy_retries_the_tool_node_in_virtual_time(
    trace: af.Trace, virtual_clock: af.VirtualClock
) -> None:
    virtual_clock.patch_sleep()
    ran: list[str] = []
    retry = RetryPolicy(max_attempts=3, initial_interval=0.5, jitter=False)
    app = tool_graph(ToolNode([make_search(ran)], handle_tool_errors=False), retry)

    answer = app.invoke(asked(call(query="docs")))["messages"][-1]

    assert (answer.status, answer.content) == ("success", "results for docs")
    assert trace.tool_attempts("search") == 3
    trace.assert_sequence(["tool.fault", "tool.fault", "tool.result"])
    assert virtual_clock.sleeps == [0.5, 1.0]  # LangGraph's backoff, never slept


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="quota"), at=2)
async def test_tool_node_async_with_parallel_calls(trace: af.Trace) -> None:
    ran: list[str] = []
    app = tool_graph(ToolNode([make_async_search(ran)], handle_tool_errors=True))

    state = await app.ainvoke(asked(call(query="a", call_id="c1"), call(query="b", call_id="c2")))

    statuses = sorted(m.status for m in state["messages"][1:])
    assert statuses == ["error", "success"]
    errors = [m.content for m in state["messages"][1:] if m.status == "error"]
    assert errors == ["Error: ToolException('quota')\n Please fix your mistakes."]
    assert len(ran) == 1
    assert trace.tool_attempts("search") == 2


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_tool_node_parallel_calls_on_threads_are_each_an_attempt(trace: af.Trace) -> None:
    ran: list[str] = []
    app = tool_graph(ToolNode([make_search(ran)], handle_tool_errors=True))

    state = app.invoke(asked(*(call(query=q, call_id=q) for q in ("a", "b", "c"))))

    statuses = sorted(m.status for m in state["messages"][1:])
    assert statuses == ["error", "error", "success"]
    assert len(ran) == 1
    assert trace.tool_attempts("search") == 3
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1, 1]  # three calls, no retry


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", delay=30)
async def test_a_langgraph_node_timeout_does_not_see_a_delay(
    virtual_clock: af.VirtualClock,
) -> None:
    # LangGraph times a node on the real clock: the 30 virtual seconds pass unseen.
    ran: list[str] = []
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([make_async_search(ran)]), timeout=5)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)

    state = await graph.compile().ainvoke(asked(call(query="a")))

    assert state["messages"][-1].content == "results for a"
    assert virtual_clock.now() == 30


@pytest.mark.asyncio
async def test_a_langgraph_node_timeout_does_not_fire_early_under_virtual_time(
    virtual_clock: af.VirtualClock,
) -> None:
    # LangGraph's watchdog is an asyncio.sleep(timeout): a virtual timer in a kit test, which
    # fires only once the loop has nothing else to run, so a node that finishes is not cut.
    ran: list[str] = []
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([make_async_search(ran)]), timeout=5)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)

    state = await graph.compile().ainvoke(asked(call(query="a")))

    assert state["messages"][-1].content == "results for a"
    assert ran == ["a"]
    assert virtual_clock.now() < 5


@pytest.mark.asyncio
async def test_a_hanging_langgraph_node_is_cut_at_its_timeout_in_virtual_time(
    virtual_clock: af.VirtualClock,
) -> None:
    forever = asyncio.Event()

    @tool
    async def stuck(query: str) -> str:
        """Never answers."""
        await forever.wait()
        return "never"

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([stuck]), timeout=5)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)

    with pytest.raises(NodeTimeoutError, match="run timeout of 5.000s"):
        await graph.compile().ainvoke(asked(call(name="stuck", query="a")))
    assert virtual_clock.now() == 5


@pytest.mark.inject_fault(tool="lookup", raises=KeyError("gone"))
def test_a_single_input_tool_shows_its_input(trace: af.Trace) -> None:
    lookup = Tool(name="lookup", func=lambda text: text.upper(), description="Look up.")
    lookup.handle_tool_error = True  # only ToolException: the KeyError goes on
    with pytest.raises(KeyError):
        lookup.invoke("paris")
    assert trace.of("tool.call")[0].detail == '{"input": "paris"}'


# ---------------------------------------------------------------- strictness and teardown


def test_an_install_inside_an_installed_one_leaves_no_layer_behind(trace: af.Trace) -> None:
    # pytester's in-process session installs the adapter inside the outer test's: its
    # undo, then the outer one, must leave LangChain as the outer test found it.
    sync_search, async_search = make_search([]), make_async_search([])
    sync_search.invoke({"query": "a"})
    asyncio.run(async_search.ainvoke({"query": "a"}))
    patchable = [(BaseTool, "run"), (BaseTool, "arun"), (StructuredTool, "_run")]
    patchable.append((StructuredTool, "_arun"))
    before = {(cls, name): cls.__dict__[name] for cls, name in patchable}

    outer = install()
    inner = install()
    try:
        sync_search.invoke({"query": "b"})
        asyncio.run(async_search.ainvoke({"query": "b"}))
    finally:
        inner()
        outer()

    assert {(cls, name): cls.__dict__[name] for cls, name in patchable} == before
    assert trace.tool_attempts("search") == 4  # one attempt each, however many layers


def test_a_strict_fault_that_never_fired_names_langchain(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from langchain_core.tools import tool

        @tool
        def lookup(query: str) -> str:
            '''Look it up.'''
            return "found"

        @pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
        def test_the_wrong_tool_ran():
            assert lookup.invoke({"query": "x"}) == "found"
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)  # passed, then failed at teardown
    result.stdout.fnmatch_lines(
        [
            "*fault on tool 'search' never fired*",
            "*the fault watches the tools of: af.Agent, *langchain*",
        ]
    )


def test_teardown_leaves_langchain_unpatched(pytester: pytest.Pytester) -> None:
    # In a process of its own: here the outer test's adapter would already be in place.
    # Once the kit is loaded every test is watched, so the following test runs with the
    # adapter installed again: it proves that what it finds is one fresh layer, and a hook
    # after each test's teardown proves that LangChain is back as shipped in between.
    pytester.makeconftest(
        """
        from langchain_core.tools import BaseTool, StructuredTool

        PATCHABLE = [
            (BaseTool, "run"), (BaseTool, "arun"), (BaseTool, "_arun"),
            (StructuredTool, "_run"), (StructuredTool, "_arun"),
        ]
        ORIGINAL = {(cls, name): cls.__dict__[name] for cls, name in PATCHABLE}

        def pytest_runtest_logfinish(nodeid):
            changed = [n for (c, n), f in ORIGINAL.items() if c.__dict__[n] is not f]
            with open("after_teardown.txt", "a") as out:
                out.write(f"{nodeid.split('::')[-1]} {changed}\\n")
        """
    )
    pytester.makepyfile(
        """
        import asyncio
        import pytest
        from langchain_core.tools import BaseTool, StructuredTool, tool
        from conftest import ORIGINAL

        @tool
        def search(query: str) -> str:
            "Search."
            return "found"

        @pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
        def test_1_faulted_sync_and_async():
            with pytest.raises(ConnectionError):
                search.invoke({"query": "x"})
            with pytest.raises(ConnectionError):
                asyncio.run(search.ainvoke({"query": "x"}))
            assert StructuredTool.__dict__["_run"] is not ORIGINAL[(StructuredTool, "_run")]

        def test_2_the_next_test_finds_one_fresh_layer(trace):
            assert BaseTool.__dict__["run"].__wrapped__ is ORIGINAL[(BaseTool, "run")]
            assert BaseTool.__dict__["arun"].__wrapped__ is ORIGINAL[(BaseTool, "arun")]
            for cls, name in [(StructuredTool, "_run"), (StructuredTool, "_arun")]:
                assert cls.__dict__[name] is ORIGINAL[(cls, name)], name  # not wrapped yet
            assert search.invoke({"query": "x"}) == "found"
            assert trace.tool_attempts("search") == 1
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "after_teardown.txt").read_text().splitlines() == [
        "test_1_faulted_sync_and_async []",
        "test_2_the_next_test_finds_one_fresh_layer []",
    ]


def test_what_one_test_added_to_a_markers_error_is_not_in_the_next(
    pytester: pytest.Pytester,
) -> None:
    # The marker's ConnectionError is one object, shared by both parametrized tests. The
    # app notes on the error it caught which query failed; the second test must read its
    # own note only, not the first test's too.
    pytester.makepyfile(
        """
        import pytest
        from langchain_core.tools import tool

        @tool
        def search(query: str) -> str:
            "Search."
            return "found"

        def app(query):
            try:
                return search.invoke({"query": query})
            except ConnectionError as error:
                error.add_note(f"while searching for {query}")
                raise

        @pytest.mark.parametrize("query", ["first", "second"])
        @pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
        def test_app(query, trace):
            with pytest.raises(ConnectionError) as caught:
                app(query)
            assert caught.value.__notes__ == [f"while searching for {query}"]
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_kit_fixtures_asked_for_late_reach_langchain_tools(request: pytest.FixtureRequest) -> None:
    # A test that takes the kit through request.getfixturevalue (a helper, a fixture that
    # picks its fixtures at run time) uses it as one that names the fixtures: its tool
    # faults reach LangChain's tools, and its trace sees them run. Before, the fault
    # never fired and the trace said the tool was never called.
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    faults = request.getfixturevalue("faults")
    trace = request.getfixturevalue("trace")
    faults.tool("lookup").raises(ConnectionError("reset")).times(1)
    with pytest.raises(ConnectionError):
        lookup.invoke({"key": "k"})
    assert lookup.invoke({"key": "k"}) == "value of k"
    assert trace.tool_attempts("lookup") == 2
