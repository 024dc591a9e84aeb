"""Float NaN and infinity reach the model and the trace as JSON null, never as NaN tokens.

``json.dumps`` writes ``NaN`` and ``Infinity``, which are not JSON: a provider refuses the
request, and a trace file no strict reader can load. A tool's result, arguments given as
a mapping and the request body a client sends all say ``null`` instead.
"""

from __future__ import annotations

import contextvars
import json
import math

import httpx

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime._recorder import collecting
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolCall


def strict_loads(text: str) -> object:
    """``json.loads`` that refuses the NaN / Infinity tokens, as every other parser does."""

    def refuse(token: str) -> object:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@af.tool
def measure(x: float) -> dict:
    """Measure."""
    return {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "list": [math.nan], "x": x}


def test_a_tool_result_with_nan_or_inf_reaches_the_model_as_null():
    model = ScriptedModel([call_tool("measure", x=1.5), say("ok")])
    agent = af.Agent("bot", model=model, tools=[measure], clock=af.VirtualClock())
    result = agent.run("x")
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    assert strict_loads(content) == {
        "nan": None,
        "inf": None,
        "ninf": None,
        "list": [None],
        "x": 1.5,
    }
    (event,) = result.trace.of("tool.result")
    assert "NaN" not in event.detail
    assert "Infinity" not in event.detail
    strict_loads(result.trace.to_json())


def test_invoke_arguments_with_nan_are_traced_as_null():
    @af.tool
    def echo(x: float | None = None) -> str:
        """Echo."""
        return "seen"

    trace = af.Trace()

    def inside() -> str:
        with collecting(trace):
            return echo.invoke({"x": math.inf})

    assert contextvars.Context().run(inside) == "seen"
    (call,) = trace.of("tool.call")
    assert strict_loads(call.detail) == {"x": None}


def test_a_trace_with_a_non_finite_value_is_written_as_valid_json():
    trace = af.Trace([af.Event(type="custom", score=math.nan)])
    assert strict_loads(trace.to_json())["events"][0]["score"] is None


def test_the_request_body_holds_no_nan_token(respx_mock):
    # Anthropic takes a tool call's arguments as an object: the raw text is parsed into one
    ok = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    route = respx_mock.post("https://api.anthropic.com/v1/messages").mock(
        return_value=httpx.Response(200, json=ok)
    )
    call = ToolCall(id="c1", name="measure", arguments='{"x": NaN, "y": [Infinity]}')
    messages = [
        Message.user("go"),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", content="1", tool_call_id="c1", name="measure"),
    ]
    with AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test-nan0123456789abcdef") as model:
        model.request(ModelRequest(messages=messages, clock=af.VirtualClock()))
    body = strict_loads(route.calls[0].request.content.decode())
    assert '"x":null' in json.dumps(body, separators=(",", ":"))
