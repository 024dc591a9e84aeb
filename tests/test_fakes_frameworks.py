"""`fake_args` for tools of other frameworks: filled from their schema, passed by their own checks.

Each case builds the tool with the real framework and hands the made-up arguments to that
framework's own path (its validator, its invoke, its server), never to ours.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import jsonschema
import pytest
from pydantic import Field
from pydantic_ai import Agent, RunContext

import pytest_agentfaults as af
from pytest_agentfaults.fakes import fake_args


def book(city: str, email: str, nights: Annotated[int, Field(ge=1, le=14)]) -> str:
    """Book a hotel."""
    return f"{city}:{email}:{nights}"


def realistic(args: dict[str, Any]) -> None:
    assert "@" in args["email"]
    assert args["city"]
    assert 1 <= args["nights"] <= 14


def test_a_plain_function() -> None:
    args = fake_args(book, seed=1)
    realistic(args)
    assert book(**args) == f"{args['city']}:{args['email']}:{args['nights']}"
    assert fake_args(book, seed=1) == args  # the seed makes it reproducible


def test_a_pydantic_ai_tool_with_its_run_context() -> None:
    agent = Agent("test")

    @agent.tool
    def book_hotel(
        ctx: RunContext[None], city: str, email: str, nights: Annotated[int, Field(ge=1, le=14)]
    ) -> str:
        """Book a hotel."""
        return city

    tool = agent._function_toolset.tools["book_hotel"]
    args = fake_args(tool, seed=2)
    assert set(args) == {"city", "email", "nights"}  # no ctx: the model never sends it
    realistic(args)
    tool.function_schema.validator.validate_json(json.dumps(args))  # pydantic-ai's own


def test_a_langchain_tool() -> None:
    from langchain_core.tools import tool

    search = tool(book)
    args = fake_args(search, seed=3)
    realistic(args)
    assert search.invoke(args) == f"{args['city']}:{args['email']}:{args['nights']}"


def test_an_openai_agents_function_tool() -> None:
    from agents import function_tool

    args = fake_args(function_tool(book), seed=4)
    realistic(args)
    jsonschema.validate(args, function_tool(book).params_json_schema)


def test_an_mcp_tool_as_the_server_lists_it_and_runs_it() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("hotels")
    server.tool()(book)

    async def listed_then_called() -> tuple[dict[str, Any], Any]:
        (listed,) = await server.list_tools()
        args = fake_args(listed, seed=5)
        return args, await server.call_tool("book", args)

    args, answer = asyncio.run(listed_then_called())
    realistic(args)
    assert f"{args['city']}:{args['email']}:{args['nights']}" in json.dumps(answer, default=str)


def test_an_anthropic_beta_tool() -> None:
    from anthropic import beta_tool

    tool = beta_tool(book)
    args = fake_args(tool, seed=6)
    realistic(args)
    assert tool.call(args) == f"{args['city']}:{args['email']}:{args['nights']}"


def test_openai_sdk_function_tools_in_each_of_its_shapes() -> None:
    import openai
    from openai.lib.responses_tool_runner import RegisteredFunction
    from pydantic import BaseModel

    parameters = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "email": {"type": "string", "format": "email"},
            "nights": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["city", "email", "nights"],
    }
    responses: Any = {"type": "function", "name": "book", "parameters": parameters}
    chat: Any = {"type": "function", "function": {"name": "book", "parameters": parameters}}
    registered = RegisteredFunction(responses, lambda args: book(**args))
    for seed, tool in enumerate((responses, chat, registered)):
        args = fake_args(tool, seed=seed)
        realistic(args)
        jsonschema.validate(args, parameters)
    assert registered.execute(fake_args(registered, seed=8)).count(":") == 2  # the SDK's call

    class Book(BaseModel):
        city: str
        email: str
        nights: Annotated[int, Field(ge=1, le=14)]

    typed = openai.pydantic_function_tool(Book)  # the SDK parses a call with the model
    args = fake_args(typed, seed=9)
    realistic(args)
    Book.model_validate_json(json.dumps(args))


def test_a_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "website": {"type": "string", "format": "uri"},
            "size": {"type": "string", "enum": ["s", "m", "l"]},
            "count": {"type": "integer", "minimum": 2, "maximum": 5},
        },
        "required": ["website", "size", "count"],
    }
    args = fake_args(schema, seed=7)
    jsonschema.validate(args, schema)
    assert args["website"].startswith(("http://", "https://"))


def test_what_is_no_tool_is_refused_with_what_is_taken() -> None:
    with pytest.raises(af.UsageError, match=r"takes a tool: an af.Tool, a function, .*got 42"):
        fake_args(42)
    with pytest.raises(af.UsageError, match="no object schema"):
        fake_args({"city": "Paris"})


def test_a_schema_no_value_fits_says_so() -> None:
    impossible = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}},
        "required": ["n"],
    }
    with pytest.raises(af.UsageError, match="found no valid arguments for tool 'the schema'"):
        fake_args(impossible, seed=1)


# ---------------------------------------------------------------- the strategies take them


def test_scripts_call_a_langchain_tool_with_arguments_it_takes() -> None:
    from hypothesis import HealthCheck, given, settings
    from langchain_core.tools import tool

    import pytest_agentfaults.strategies as afst
    from pytest_agentfaults.testing.steps import ToolCallStep

    search = tool(book)
    seen: list[dict[str, Any]] = []

    @settings(max_examples=15, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(afst.scripts(tools=search, bad_calls=False, failures=False, min_steps=1))
    def check(script: list[Any]) -> None:
        for step in script:
            calls = [step] if isinstance(step, ToolCallStep) else getattr(step, "calls", [])
            for call in calls:
                assert call.name == "book"
                arguments = json.loads(call.arguments)
                search.invoke(arguments)  # LangChain's own validation takes them
                seen.append(arguments)

    check()
    assert seen  # some scripts did call it


def test_fault_plans_and_configs_name_a_framework_tool_by_its_name() -> None:
    from agents import function_tool
    from hypothesis import given, settings

    import pytest_agentfaults.strategies as afst

    names: set[str] = set()

    @settings(max_examples=20, derandomize=True)
    @given(afst.fault_plans(tools=[function_tool(book)], llm=False, http=False))
    def check(plan: af.FaultPlan) -> None:
        names.update(fault.tool for fault in plan.faults)

    check()
    assert names == {"book"}
    with pytest.raises(af.UsageError, match="got 42"):
        afst.resilience_configs(tools=[42])
