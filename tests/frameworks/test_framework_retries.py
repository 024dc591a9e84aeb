"""What a framework's trace calls a retry is what the framework retried, nothing more.

An attempt at a tool after a failed one is the framework's retry only when the framework
made it in answer to that failure: a later model turn of the same run (pydantic-ai asking
the model again, the Agents SDK feeding the error back, a LangGraph agent's next step) or
the same call attempted again (``with_retry``, a LangGraph ``RetryPolicy``). A parallel
call of the same model turn is not a retry, nor is the first call of another run; and the
``attempt`` numbers, which the verdict reads, count within one failure streak, so a new
call is attempt 1 and a non-idempotent tool's new call is not "run again".

The frameworks are real: pydantic-ai with its `FunctionModel`, the Agents SDK against the
loopback `llm_server`, LangGraph's `ToolNode` in a real graph.
"""

from __future__ import annotations

import asyncio
from typing import Any

import agents
import openai
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, RetryPolicy, interrupt
from pydantic_ai import (
    Agent,
    ApprovalRequired,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    RunContext,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import pytest_agentfaults as af
from pytest_agentfaults.testing import call_tool, call_tools, malformed, say

NO_TRACING = agents.RunConfig(tracing_disabled=True)


# ---------------------------------------------------------------- pydantic-ai


def two_searches_then_done(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One model turn asking for two searches at once, then an answer."""
    if len(messages) == 1:
        return ModelResponse(
            parts=[
                ToolCallPart("search", {"q": "a"}, tool_call_id="c1"),
                ToolCallPart("search", {"q": "b"}, tool_call_id="c2"),
            ]
        )
    return ModelResponse(parts=[TextPart("done")])


def one_search_then_done(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``search`` once per run, then answers whatever the tool said."""
    if len(messages[-1].parts) and messages[-1].parts[0].part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("search", {"q": "a"})])
    return ModelResponse(parts=[TextPart("done")])


def search_until_it_answers(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``search`` until a call of it returns, then answers."""
    for part in messages[-1].parts:
        if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
            return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("search", {"q": "a"})])


def searching_agent(model: Any, ran: list[str]) -> Agent[None, str]:
    agent = Agent(FunctionModel(model))

    @agent.tool_plain(retries=3)
    def search(q: str) -> str:
        ran.append(q)
        return "the docs"

    return agent


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("busy"), times=1)
def test_pydantic_ai_parallel_calls_of_one_turn_are_not_retries(trace: af.Trace) -> None:
    ran: list[str] = []
    assert searching_agent(two_searches_then_done, ran).run_sync("go").output == "done"
    assert ran == ["b"]  # the first call was faulted, the second ran
    assert trace.tool_attempts("search") == 2
    assert trace.retries("search") == 0  # pydantic-ai retried nothing: the model answered
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1]


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_pydantic_ai_a_second_run_is_not_a_retry_of_the_first(trace: af.Trace) -> None:
    ran: list[str] = []
    agent = searching_agent(one_search_then_done, ran)
    with pytest.raises(ConnectionError):
        agent.run_sync("go")  # pydantic-ai does not retry a ConnectionError: the run ends
    assert agent.run_sync("again").output == "done"
    assert ran == ["a"]
    assert trace.retries("search") == 0
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1]


# ---------------------------------------------------------------- the Agents SDK

CHARGED: list[str] = []


@agents.function_tool
def charge(customer: str) -> str:
    """Charge a customer."""
    CHARGED.append(customer)
    return f"charged {customer}"


@pytest.fixture(autouse=True)
def _fresh_charges() -> None:
    CHARGED.clear()


def run_charging(llm_server: af.LLMServer) -> Any:
    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test"
        ) as client:
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = agents.Agent(name="biller", instructions="Bill.", tools=[charge], model=model)
            return await agents.Runner.run(agent, "bill", run_config=NO_TRACING)

    return asyncio.run(main())


@pytest.mark.inject_fault(tool="charge", raises=TimeoutError(), times=1, idempotent=False)
def test_agents_sdk_parallel_calls_are_not_a_non_idempotent_rerun(
    llm_server: af.LLMServer, trace: af.Trace
) -> None:
    llm_server.script(
        [call_tools([("charge", {"customer": "ann"}), ("charge", {"customer": "bob"})]), say("ok")]
    )
    assert run_charging(llm_server).final_output == "ok"
    assert CHARGED == ["bob"]  # two customers, each charged at most once
    assert trace.retries("charge") == 0
    verdict = trace.verdict()
    assert "retried_non_idempotent" not in verdict.codes, verdict.render()


@pytest.mark.inject_fault(tool="charge", raises=TimeoutError(), times=1, idempotent=False)
def test_agents_sdk_the_same_charge_asked_again_is_a_rerun(
    llm_server: af.LLMServer, trace: af.Trace
) -> None:
    llm_server.script(
        [call_tool("charge", customer="ann"), call_tool("charge", customer="ann"), say("ok")]
    )
    assert run_charging(llm_server).final_output == "ok"
    assert CHARGED == ["ann"]
    assert trace.retries("charge") == 1  # the model asked again after the error: a retry
    assert trace.verdict().codes == ["retried_non_idempotent"]


@pytest.mark.inject_fault(tool="charge", raises=ConnectionError("reset"), times=1)
def test_agents_sdk_a_second_run_is_not_a_retry_of_the_first(
    llm_server: af.LLMServer, trace: af.Trace
) -> None:
    llm_server.script(
        [
            call_tool("charge", customer="ann"),
            say("sorry"),  # the first run gives up after the error
            call_tool("charge", customer="bob"),
            say("ok"),
        ]
    )
    assert run_charging(llm_server).final_output == "sorry"
    assert run_charging(llm_server).final_output == "ok"
    assert trace.retries("charge") == 0
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1]


# ---------------------------------------------------------------- LangGraph


def make_search(ran: list[str]) -> Any:
    @tool
    def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    return search


def agent_graph(ran: list[str], first_calls: list[str]) -> Any:
    """A LangGraph agent loop: ask for ``first_calls``; after an error, ask once more."""

    def model(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage | ToolMessage):
            calls = [
                {"name": "search", "args": {"query": q}, "id": f"first-{q}"} for q in first_calls
            ]
            return {"messages": [AIMessage(content="", tool_calls=calls)]}
        turn = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        if any(m.status == "error" for m in turn[-len(first_calls) :]) and len(turn) == len(
            first_calls
        ):
            again = {"name": "search", "args": {"query": "again"}, "id": "second"}
            return {"messages": [AIMessage(content="", tool_calls=[again])]}
        return {"messages": [AIMessage(content="done")]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([make_search(ran)], handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_langgraph_parallel_calls_of_one_step_are_not_retries(trace: af.Trace) -> None:
    ran: list[str] = []
    app = agent_graph(ran, first_calls=["a", "b", "c"])
    state = app.invoke({"messages": [("user", "find")]})
    assert state["messages"][-1].content == "done"
    assert len(ran) == 2  # one call of the first step ran, then the one asked again
    assert "again" in ran
    assert trace.tool_attempts("search") == 4
    # the three calls of the first step are new calls; the step after the errors retries
    assert trace.retries("search") == 1
    assert sorted(e.attempt for e in trace.of("tool.call")) == [1, 1, 1, 2]


def test_a_misspelt_tool_fault_says_which_pydantic_ai_tools_ran() -> None:
    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:  # noqa: PT012
        scope.faults.tool("serach").raises(ModelRetry("busy"))
        searching_agent(one_search_then_done, []).run_sync("go")
    assert "the tools called were search" in str(failed.value)
    assert "the fault watches the tools of: af.Agent, pydantic_ai" in str(failed.value)


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ModelRetry("busy"), times=1)
async def test_pydantic_ai_concurrent_runs_keep_their_own_failures(trace: af.Trace) -> None:
    ran: list[str] = []
    agent = Agent(FunctionModel(search_until_it_answers))

    @agent.tool_plain(retries=3)
    async def search(q: str) -> str:  # async: it answers at once, between the other's turns
        ran.append(q)
        return "the docs"

    first, second = await asyncio.gather(agent.run("one"), agent.run("two"))
    assert (first.output, second.output) == ("done", "done")
    assert ran == ["a", "a"]  # the faulted call of one run, asked again, then ran
    assert trace.tool_attempts("search") == 3
    # the other run's call, in between, is not a retry and does not end this run's failure
    assert trace.retries("search") == 1


# ---------------------------------------------------------------- not failures

CHARGE_CALL = {"name": "charge", "args": {"amount": 5}, "id": "c1"}


@tool("charge")
def charge_after_approval(amount: int) -> str:
    """Charge, once a human approved it."""
    approved = interrupt(f"charge {amount}?")
    return "charged" if approved else "cancelled"


def test_a_langgraph_interrupt_in_a_tool_is_no_failure_and_its_resume_no_retry(
    faults: af.FaultPlan, trace: af.Trace
) -> None:
    faults.tool("unrelated").raises(ConnectionError()).strict(False)  # the test uses the kit
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([charge_after_approval]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    app.invoke({"messages": [AIMessage(content="", tool_calls=[CHARGE_CALL])]}, config)
    state = app.invoke(Command(resume=True), config)  # the human approves
    assert state["messages"][-1].content == "charged"
    assert trace.errors("charge") == []  # a pause for a human, not a failed tool
    assert trace.retries("charge") == 0
    assert trace.tool_attempts("charge") == 2  # LangGraph runs the tool again on resume
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.call", "tool.result"]


def test_a_pydantic_ai_approval_request_is_no_failure(
    faults: af.FaultPlan, trace: af.Trace
) -> None:
    faults.tool("unrelated").raises(ConnectionError()).strict(False)  # the test uses the kit

    def asks_to_charge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(p.part_kind == "tool-return" for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("charge", {"amount": 5}, tool_call_id="c1")])

    agent = Agent(FunctionModel(asks_to_charge), output_type=[str, DeferredToolRequests])

    @agent.tool
    def charge(ctx: RunContext[None], amount: int) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired
        return "charged"

    paused = agent.run_sync("charge 5")
    assert isinstance(paused.output, DeferredToolRequests)
    approved = DeferredToolResults(approvals={"c1": True})
    done = agent.run_sync(message_history=paused.all_messages(), deferred_tool_results=approved)
    assert done.output == "done"
    assert trace.errors("charge") == []  # asking for approval is not failing
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.call", "tool.result"]


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_langgraph_retry_policy_retries_each_failed_parallel_call(
    trace: af.Trace, virtual_clock: af.VirtualClock
) -> None:
    virtual_clock.patch_sleep()
    ran: list[str] = []

    @tool("search")
    async def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    graph = StateGraph(MessagesState)
    graph.add_node(
        "tools",
        ToolNode([search], handle_tool_errors=False),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.5, jitter=False),
    )
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    calls = [{"name": "search", "args": {"query": q}, "id": q} for q in "ab"]
    await graph.compile().ainvoke({"messages": [AIMessage(content="", tool_calls=calls)]})
    assert sorted(ran) == ["a", "b"]  # both failed once, LangGraph ran the node again
    assert trace.tool_attempts("search") == 4
    assert trace.retries("search") == 2  # each failed call, attempted again
    assert sorted(e.attempt for e in trace.of("tool.call")) == [1, 1, 2, 2]


# ---------------------------------------------------------------- what a fault stands in for


@agents.function_tool
def lookup(query: str) -> str:
    """Look the docs up."""
    CHARGED.append(query)
    return f"pages about {query}"


@pytest.mark.inject_fault(tool="lookup", raises=ConnectionError("reset"), times=1)
def test_agents_sdk_a_fault_hits_a_call_the_sdk_runs_not_one_it_refuses(
    llm_server: af.LLMServer, trace: af.Trace
) -> None:
    # Arguments that are not JSON: the SDK refuses the call before the tool would run (as
    # pydantic-ai and LangChain do before their hooked call); the fault is for the tool.
    llm_server.script(
        [
            malformed.tool_args('{"query": ', tool="lookup"),
            call_tool("lookup", query="a"),
            call_tool("lookup", query="a"),
            say("ok"),
        ]
    )

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test"
        ) as client:
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = agents.Agent(name="reader", tools=[lookup], model=model)
            return await agents.Runner.run(agent, "read", run_config=NO_TRACING)

    assert asyncio.run(main()).final_output == "ok"
    assert CHARGED == ["a"]  # the first valid call was faulted, the second ran
    assert [e.error.type for e in trace.errors("lookup") if e.error] == [
        "ModelBehaviorError",  # the SDK's refusal, still an attempt in the trace
        "ConnectionError",
    ]


# --------------------------------------------------------------------------------------
# A framework that says nothing of runs, turns or call ids (a LangChain tool invoked
# directly or in a batch, an MCP session, a patched function): the same call again is
# told by its arguments. A loop over customers is two calls, not a retry of the first.


@tool
def refund(customer: str) -> str:
    """Refund a customer."""
    CHARGED.append(customer)
    return f"refunded {customer}"


@pytest.mark.inject_fault(tool="refund", raises=TimeoutError(), times=1, idempotent=False)
def test_langchain_a_loop_over_customers_is_not_a_rerun(trace: af.Trace) -> None:
    CHARGED.clear()
    outcomes = []
    for customer in ("ann", "bob"):
        try:
            outcomes.append(refund.invoke({"customer": customer}))
        except TimeoutError:
            outcomes.append("timeout")
    assert outcomes == ["timeout", "refunded bob"]
    assert trace.retries("refund") == 0
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1]
    verdict = trace.verdict()
    assert "retried_non_idempotent" not in verdict.codes, verdict.render()


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), times=1)
def test_langchain_a_batch_of_two_inputs_has_no_retry(trace: af.Trace) -> None:
    CHARGED.clear()
    out = refund.batch([{"customer": "ann"}, {"customer": "bob"}], return_exceptions=True)
    assert [type(o).__name__ for o in out] == ["ConnectionError", "str"]
    assert trace.retries("refund") == 0


@pytest.mark.inject_fault(tool="refund", raises=TimeoutError(), times=1, idempotent=False)
def test_langchain_the_same_refund_invoked_again_is_a_rerun(trace: af.Trace) -> None:
    CHARGED.clear()
    retrying = refund.with_retry(stop_after_attempt=2, wait_exponential_jitter=False)
    assert retrying.invoke({"customer": "ann"}) == "refunded ann"
    assert trace.retries("refund") == 1
    assert [e.attempt for e in trace.of("tool.call")] == [1, 2]
    # run again at once, too: with_retry waited nothing (wait_exponential_jitter=False)
    assert trace.verdict().codes == ["no_backoff", "retried_non_idempotent"]


@pytest.mark.inject_fault(tool="refund", raises=ConnectionError("reset"), times=1)
def test_langchain_a_streak_per_call_survives_other_calls_between(trace: af.Trace) -> None:
    # ann fails; bob runs; ann is asked again: ann's second attempt is ann's retry
    CHARGED.clear()
    for customer in ("ann", "bob", "ann"):
        try:
            refund.invoke({"customer": customer})
        except ConnectionError:
            pass
    assert CHARGED == ["bob", "ann"]
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1, 2]
    assert trace.retries("refund") == 1
