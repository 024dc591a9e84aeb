"""Tool faults reach the OpenAI Agents SDK's `@function_tool` tools (issue 16).

The agents are real `agents.Agent`s run by `Runner.run` / `Runner.run_sync`; their model
is the SDK's own `OpenAIChatCompletionsModel`, pointed at the loopback `llm_server`, which
plays the model's side over a real socket. Nothing of the SDK is mocked: what the tests
observe is the SDK's own recovery, its `failure_error_function` turning a raising tool into
the message the model reads, and the model (the script) calling the tool again.
"""

from __future__ import annotations

import asyncio
import json

import agents
import openai
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing import call_tool, malformed, say

DEFAULT_MESSAGE = "An error occurred while running the tool. Please try again."
NO_TRACING = agents.RunConfig(tracing_disabled=True)

CALLS: list[str] = []


@pytest.fixture(autouse=True)
def _fresh_calls():
    CALLS.clear()


@agents.function_tool
def search(query: str) -> str:
    """Search the docs."""
    CALLS.append(query)
    return f"3 pages about {query}"


@agents.function_tool(failure_error_function=lambda ctx, error: f"search failed: {error}")
def search_verbose(query: str) -> str:
    """Search the docs, and say why a search failed."""
    CALLS.append(query)
    return f"3 pages about {query}"


@agents.function_tool(failure_error_function=None)
def search_or_raise(query: str) -> str:
    """Search the docs; a failure ends the run."""
    CALLS.append(query)
    return f"3 pages about {query}"


@agents.function_tool
async def asearch(query: str) -> str:
    """Search the docs, asynchronously."""
    CALLS.append(query)
    return f"3 pages about {query}"


def make_agent(client, *tools):
    model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    return agents.Agent(name="researcher", instructions="Be brief.", tools=list(tools), model=model)


def run(llm_server, *tools):
    """`Runner.run` on a loop of its own, with a client closed on that loop."""

    async def main():
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test"
        ) as client:
            return await agents.Runner.run(
                make_agent(client, *tools), "find", run_config=NO_TRACING
            )

    return asyncio.run(main())


def default_loop():
    """The loop set as the thread's default, if any, without making one as a side effect.

    `asyncio.get_event_loop()` would create (and set) a loop when none is set; that loop,
    put back at teardown, would be dropped unclosed by the next test that sets its own
    (pytest-asyncio does), and warn. The policy's thread-local is read instead.
    """
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)
    return getattr(local, "_loop", None)


@pytest.fixture
def sync_client(llm_server):
    """A client for `Runner.run_sync`, on a default event loop of the test's own.

    `Runner.run_sync` runs on the thread's default loop, keeps it open and shuts its async
    generators down after every run: a second run on that loop warns (a ResourceWarning,
    an error here). One fresh loop per test, closed with the client on it at teardown.
    """
    previous = default_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    client = openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="sk-test")
    try:
        yield client
    finally:
        loop.run_until_complete(client.close())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(previous)


def tool_messages(llm_server):
    """What the model was told about each tool call, request after request."""
    seen = []
    for request in llm_server.requests:
        messages = request.json()["messages"]
        seen = [m["content"] for m in messages if m["role"] == "tool"]
    return seen


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_raises_goes_through_the_sdks_failure_function_and_the_model_retries(
    sync_client, llm_server, trace
):
    llm_server.script([call_tool("search", query="faults")] * 3 + [say("Found 3 pages.")])
    agent = make_agent(sync_client, search)
    result = agents.Runner.run_sync(agent, "find", run_config=NO_TRACING)

    assert result.final_output == "Found 3 pages."
    assert tool_messages(llm_server) == [DEFAULT_MESSAGE, DEFAULT_MESSAGE, "3 pages about faults"]
    assert CALLS == ["faults"]  # the tool body ran once: the two faulted attempts replaced it
    assert trace.tool_attempts("search") == 3
    trace.assert_sequence("tool.fault", "tool.error", "tool.fault", "tool.error", "tool.result")
    assert {e.field("framework") for e in trace.of("tool.call")} == {"openai_agents"}
    assert [e.field("attempt") for e in trace.of("tool.call")] == [1, 2, 3]
    assert len(trace.of("tool.retry")) == 2  # the model's calls again after a failure


@pytest.mark.inject_fault(tool="search_verbose", raises=TimeoutError("index slow"), at=2)
def test_a_custom_failure_function_receives_the_injected_exception(llm_server, trace):
    llm_server.script(
        [call_tool("search_verbose", query=q) for q in ("a", "b", "c")] + [say("done")]
    )
    run(llm_server, search_verbose)

    assert tool_messages(llm_server) == [
        "3 pages about a",
        "search failed: index slow",
        "3 pages about c",
    ]
    assert CALLS == ["a", "c"]
    assert [e.type for e in trace.events if e.type in ("tool.fault", "tool.result")] == [
        "tool.result",
        "tool.fault",
        "tool.result",
    ]


@pytest.mark.inject_fault(
    tool="search_verbose",
    returns=af.ToolFailure(error="no results", recommendations=["Try a broader query"]),
)
def test_tool_failure_becomes_the_failure_functions_message(llm_server, trace, faults):
    llm_server.script([call_tool("search_verbose", query="x"), say("Nothing found.")])
    run(llm_server, search_verbose)

    assert tool_messages(llm_server) == [
        "search failed: no results Recommendations: Try a broader query"
    ]
    assert CALLS == []
    assert len(faults.fired) == 1
    (error,) = trace.of("tool.error")
    assert error.field("framework") == "openai_agents"
    assert error.error.message == "no results"


@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="quota used up"))
def test_tool_failure_with_the_default_failure_function(llm_server):
    llm_server.script([call_tool("search", query="x"), say("Sorry.")])
    run(llm_server, search)
    assert tool_messages(llm_server) == [DEFAULT_MESSAGE]
    assert CALLS == []


@pytest.mark.inject_fault(tool="search_or_raise", raises=ConnectionError("reset"))
def test_without_a_failure_function_the_run_fails_as_the_sdk_documents(llm_server, trace):
    llm_server.script([call_tool("search_or_raise", query="x")])
    with pytest.raises(
        agents.UserError, match="Error running tool search_or_raise: reset"
    ) as raised:
        run(llm_server, search_or_raise)
    assert isinstance(raised.value.__cause__, ConnectionError)  # the injected one
    assert CALLS == []
    assert trace.tool_attempts("search_or_raise") == 1


@pytest.mark.inject_fault(tool="search", returns="cached: 1 page")
def test_returns_a_value_in_place_of_the_tool(llm_server, trace):
    llm_server.script([call_tool("search", query="x"), say("ok")])
    run(llm_server, search)
    assert tool_messages(llm_server) == ["cached: 1 page"]
    assert CALLS == []
    trace.assert_sequence("tool.call", "tool.fault", "tool.result")


@pytest.mark.asyncio
async def test_the_async_runner_and_an_async_tool_with_fluent_faults(llm_server, faults, trace):
    faults.tool("asearch").raises(ConnectionError("reset")).times(1)
    llm_server.script([call_tool("asearch", query="q")] * 2 + [say("done")])

    async with openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client:
        agent = make_agent(client, asearch)
        result = await agents.Runner.run(agent, "find", run_config=NO_TRACING)

    assert result.final_output == "done"
    assert tool_messages(llm_server) == [DEFAULT_MESSAGE, "3 pages about q"]
    assert CALLS == ["q"]
    assert trace.tool_attempts("asearch") == 2
    trace.assert_sequence("tool.fault:asearch", "tool.result:asearch")


def test_a_malformed_tool_call_is_an_attempt_the_sdk_reports_back(llm_server, trace):
    llm_server.script(
        [
            malformed.tool_args('{"query": ', tool="search"),
            call_tool("search", query="q"),
            say("ok"),
        ]
    )
    run(llm_server, search)

    assert tool_messages(llm_server) == [DEFAULT_MESSAGE, "3 pages about q"]
    assert CALLS == ["q"]
    assert trace.tool_attempts("search") == 2
    first, second = trace.of("tool.call")
    assert first.detail is None  # the arguments were not JSON
    assert json.loads(second.detail) == {"query": "q"}
    trace.assert_sequence("tool.call", "tool.error", "tool.call", "tool.result")
    assert trace.of("tool.error")[0].error.type == "ModelBehaviorError"


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_arguments_the_tools_schema_refuses_do_not_take_the_fault(llm_server, trace, faults):
    # JSON, but not the tool's arguments: the SDK refuses the call before the tool runs,
    # so the fault is left for the call that reaches the tool, as with unparsable JSON.
    llm_server.script(
        [
            malformed.tool_args('{"q": "retries"}', tool="search"),
            call_tool("search", query="retries"),
            call_tool("search", query="retries"),
            say("ok"),
        ]
    )
    run(llm_server, search)

    assert tool_messages(llm_server) == [DEFAULT_MESSAGE, DEFAULT_MESSAGE, "3 pages about retries"]
    assert CALLS == ["retries"]
    assert [e.error.type for e in trace.of("tool.error")] == [
        "ModelBehaviorError",
        "ConnectionError",
    ]
    assert faults.fired[0].occurrence == 1  # the refused call was no occurrence


@agents.function_tool(timeout=1.0)
async def search_with_timeout(query: str) -> str:
    """Search the docs within a second."""
    CALLS.append(query)
    return f"3 pages about {query}"


@pytest.mark.inject_fault(tool="search_with_timeout", delay=30.0)
def test_delay_moves_virtual_time_which_the_sdks_tool_timeout_cannot_see(
    llm_server, trace, virtual_clock
):
    llm_server.script([call_tool("search_with_timeout", query="q"), say("ok")])
    before = virtual_clock.now()
    run(llm_server, search_with_timeout)
    assert virtual_clock.now() - before >= 30.0
    # The SDK times a tool with asyncio.wait_for on the event loop's own clock: the
    # virtual 30 s are not seen, and the tool's answer arrives.
    assert tool_messages(llm_server) == ["3 pages about q"]
    assert CALLS == ["q"]


def test_every_attempt_is_traced_without_any_fault(llm_server, trace):
    llm_server.script([call_tool("search", query="a"), call_tool("search", query="b"), say("ok")])
    run(llm_server, search)
    assert trace.tool_attempts("search") == 2
    assert [e.field("framework") for e in trace.of("tool.result")] == ["openai_agents"] * 2
    assert not trace.of("tool.fault")


def test_the_adapter_is_registered_under_the_sdks_module():
    from pytest_agentfaults.testing._frameworks import ADAPTERS

    assert ADAPTERS["agents"] == "pytest_agentfaults.testing._frameworks.openai_agents:install"


# An Agents SDK agent's MCP tools: the SDK wraps each in a FunctionTool whose invoker calls
# `mcp.ClientSession.call_tool`. Its MCP servers connect over stdio or HTTP; this one, for
# the test, over the mcp SDK's own in-memory transport to a real MCPServer.
from agents.mcp.server import _MCPServerWithClientSession  # noqa: E402
from mcp.client._memory import InMemoryTransport  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

docs_server = MCPServer("docs")


@docs_server.tool(name="search")
def mcp_search(query: str) -> str:
    """Search the docs."""
    CALLS.append(query)
    return f"3 pages about {query}"


class InProcessMCPServer(_MCPServerWithClientSession):
    def __init__(self, server: MCPServer) -> None:
        super().__init__(cache_tools_list=True, client_session_timeout_seconds=None)
        self._server = server

    def create_streams(self):
        return InMemoryTransport(self._server)

    @property
    def name(self) -> str:
        return "docs"


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_an_mcp_tool_of_an_agent_is_one_attempt_of_the_agents_sdk(llm_server, trace):
    llm_server.script([call_tool("search", query="a"), call_tool("search", query="b"), say("ok")])

    async def main():
        async with (
            InProcessMCPServer(docs_server) as server,
            openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client,
        ):
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = agents.Agent(name="bot", mcp_servers=[server], model=model)
            return await agents.Runner.run(agent, "go", run_config=NO_TRACING)

    asyncio.run(main())

    assert tool_messages(llm_server)[0] == DEFAULT_MESSAGE
    assert CALLS == ["b"]
    # Counted once, by the framework whose recovery the model saw; the session's own
    # call_tool inside that attempt records nothing more.
    assert trace.tool_attempts("search") == 2
    assert {e.field("framework") for e in trace.of("tool.*")} == {"openai_agents"}


@pytest.mark.inject_fault(tool="ask_researcher", raises=ConnectionError("reset"))
def test_an_agent_used_as_a_tool_is_hooked_too(llm_server, trace):
    llm_server.script([call_tool("ask_researcher", input="retries?"), say("I could not ask.")])
    researcher = agents.Agent(name="researcher", instructions="Answer.")
    tool = researcher.as_tool(tool_name="ask_researcher", tool_description="Ask the researcher.")

    result = run(llm_server, tool)

    assert result.final_output == "I could not ask."
    assert tool_messages(llm_server) == [DEFAULT_MESSAGE]  # the sub-agent never ran
    trace.assert_sequence(["tool.call:ask_researcher", "tool.fault", "tool.error"])


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_a_streamed_run_takes_the_same_tool_path(llm_server, trace):
    llm_server.script([call_tool("search", query="a"), call_tool("search", query="b"), say("ok")])

    async def main():
        async with openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as c:
            streamed = agents.Runner.run_streamed(
                make_agent(c, search), "find", run_config=NO_TRACING
            )
            kinds = [event.type async for event in streamed.stream_events()]
            return streamed, kinds

    streamed, kinds = asyncio.run(main())

    assert streamed.final_output == "ok"
    assert "run_item_stream_event" in kinds
    assert CALLS == ["b"]
    assert trace.tool_attempts("search") == 2
    trace.assert_sequence(["tool.fault:search", "tool.result:search"])


@pytest.mark.inject_fault(tool="mcp_docs__search", raises=ConnectionError("reset"), times=1)
def test_an_mcp_tool_under_its_server_prefixed_name_is_one_attempt(llm_server, trace):
    # include_server_in_tool_names: the model sees "mcp_docs__search", the MCP session is
    # asked for "search"; one call of the model is still one attempt, under the model's name
    steps = [call_tool("mcp_docs__search", query=q) for q in "ab"]
    llm_server.script([*steps, say("ok")])

    async def main():
        async with (
            InProcessMCPServer(docs_server) as server,
            openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client,
        ):
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = agents.Agent(
                name="bot",
                mcp_servers=[server],
                model=model,
                mcp_config={"include_server_in_tool_names": True},
            )
            return await agents.Runner.run(agent, "go", run_config=NO_TRACING)

    asyncio.run(main())

    assert tool_messages(llm_server)[0] == DEFAULT_MESSAGE
    assert CALLS == ["b"]
    assert [e.tool for e in trace.of("tool.call")] == ["mcp_docs__search"] * 2
    assert {e.field("framework") for e in trace.of("tool.*")} == {"openai_agents"}
