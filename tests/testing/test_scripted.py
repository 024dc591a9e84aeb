"""ScriptedModel and its steps, through the public API of pytest_agentfaults.testing."""

from __future__ import annotations

import json
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

import pytest_agentfaults.testing as testing
from pytest_agentfaults.errors import (
    AgentFaultsError,
    MalformedResponseError,
    ModelAuthError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
    classify,
)
from pytest_agentfaults.runtime.models.base import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from pytest_agentfaults.testing import (
    ScriptedModel,
    ScriptExhaustedError,
    Step,
    call_tool,
    call_tools,
    fail,
    malformed,
    say,
)

SCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "scripts"


def make_request(
    *texts: str, tools: tuple[str, ...] = ("fetch", "parse"), stream: bool = False
) -> ModelRequest:
    return ModelRequest(
        messages=[Message.user(text) for text in texts] or [Message.user("go")],
        tools=[ToolSpec(name=name) for name in tools],
        stream=stream,
    )


def answer(step: Step, request: ModelRequest | None = None) -> ModelResponse:
    return ScriptedModel([step]).request(request or make_request())


def raised(step: Step, request: ModelRequest | None = None) -> BaseException:
    model = ScriptedModel([step], name="flaky")
    with pytest.raises(BaseException) as info:
        model.request(request or make_request())
    return info.value


# --------------------------------------------------------------------------- public surface


def test_testing_package_exports_a_sorted_complete_all() -> None:
    assert testing.__all__ == sorted(testing.__all__)
    assert set(testing.__all__) >= {
        "ScriptExhaustedError",
        "ScriptedModel",
        "Step",
        "call_tool",
        "call_tools",
        "fail",
        "malformed",
        "say",
    }
    for name in testing.__all__:
        assert getattr(testing, name).__doc__


def test_scripted_model_follows_the_model_protocol() -> None:
    model = ScriptedModel([say("hi")], name="bot", strict=False)  # inspected, never run
    assert isinstance(model, Model)
    assert model.name == "bot"


# --------------------------------------------------------------------------- answering steps


def test_say_answers_text_with_no_tool_call() -> None:
    response = answer(say("Paris"))
    assert response.text == "Paris"
    assert response.tool_calls == []
    assert response.message.role == "assistant"
    assert response.finish_reason == "stop"
    assert response.model == "scripted"


def test_a_plain_string_step_is_say() -> None:
    model = ScriptedModel(["short for say"])
    assert model.steps == (say("short for say"),)
    assert model.request(make_request()).text == "short for say"


def test_call_tool_sends_keyword_arguments_as_json() -> None:
    response = answer(call_tool("fetch", url="https://example.com", retries=2))
    assert response.finish_reason == "tool_calls"
    assert response.text == ""
    [call] = response.tool_calls
    assert isinstance(call, ToolCall)
    assert call.name == "fetch"
    assert json.loads(call.arguments) == {"url": "https://example.com", "retries": 2}


def test_call_tool_argument_named_json_holds_the_text_verbatim() -> None:
    # The contract's example: the argument called `json` carries unquoted-key JSON text.
    [call] = answer(call_tool("count_keys", json="{name: world}")).tool_calls
    assert json.loads(call.arguments) == {"json": "{name: world}"}


def test_call_tool_arguments_may_shadow_its_own_parameter_names() -> None:
    [call] = answer(call_tool("greet", name="Ada")).tool_calls
    assert (call.name, json.loads(call.arguments)) == ("greet", {"name": "Ada"})


def test_call_tool_without_arguments_sends_an_empty_object() -> None:
    [call] = answer(call_tool("now")).tool_calls
    assert call.arguments == "{}"


@pytest.mark.parametrize(
    "step",
    [call_tool("parse", raw_args="{bad"), call_tool("parse", "{bad")],
    ids=["keyword", "positional"],
)
def test_call_tool_raw_args_are_sent_verbatim(step: Step) -> None:
    [call] = answer(step).tool_calls
    assert call.arguments == "{bad"


def test_call_tool_rejects_raw_args_with_keyword_arguments() -> None:
    with pytest.raises(UsageError, match="raw_args and keyword arguments"):
        call_tool("parse", raw_args="{}", json="x")


def test_call_tool_rejects_arguments_that_are_not_json() -> None:
    with pytest.raises(UsageError, match="cannot be written as JSON"):
        call_tool("fetch", url=object())


def test_call_tool_keeps_non_ascii_text_readable() -> None:
    [call] = answer(call_tool("translate", text="héllo")).tool_calls
    assert call.arguments == '{"text": "héllo"}'


def test_call_tools_makes_parallel_calls_in_one_turn() -> None:
    step = call_tools(
        [
            call_tool("fetch", url="a"),
            ("fetch", {"url": "b"}),
            malformed.tool_args("{oops", tool="parse"),
            malformed.unknown_tool("teleport"),
        ]
    )
    response = answer(step)
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "fetch", '{"url": "a"}'),
        ("call_2", "fetch", '{"url": "b"}'),
        ("call_3", "parse", "{oops"),
        ("call_4", "teleport", "{}"),
    ]


@pytest.mark.parametrize("calls", [[], [say("no")], ["fetch"], [("fetch", "not a dict")]])
def test_call_tools_rejects_what_is_not_a_tool_call(calls: list[object]) -> None:
    with pytest.raises(UsageError, match="call_tools"):
        call_tools(calls)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- ids and usage


def test_tool_call_ids_count_per_model_across_turns() -> None:
    model = ScriptedModel(
        [call_tool("fetch"), call_tools([("fetch", {}), ("parse", {})]), call_tool("fetch")]
    )
    ids = [[c.id for c in model.request(make_request()).tool_calls] for _ in range(3)]
    assert ids == [["call_1"], ["call_2", "call_3"], ["call_4"]]


def test_tool_call_ids_are_the_same_for_every_model_and_after_reset() -> None:
    step = call_tool("fetch")
    # strict=False: `first` is reset and run again only partly
    first, second = ScriptedModel([step, step], strict=False), ScriptedModel([step])
    assert first.request(make_request()).tool_calls[0].id == "call_1"
    assert first.request(make_request()).tool_calls[0].id == "call_2"
    assert second.request(make_request()).tool_calls[0].id == "call_1"
    first.reset()
    assert first.request(make_request()).tool_calls[0].id == "call_1"


def test_a_step_answered_without_a_model_numbers_its_own_ids() -> None:
    response = call_tools([("a", {}), ("b", {})]).respond(make_request())
    assert [c.id for c in response.tool_calls] == ["call_1", "call_2"]
    assert response.model == "scripted"


def test_usage_counts_words_deterministically() -> None:
    request = ModelRequest(
        messages=[
            Message.system("be brief"),
            Message.user("count three words"),
            Message.assistant("", [ToolCall(id="c", name="n", arguments='{"a": 1}')]),
            Message.tool_result("two words", tool_call_id="c", name="n"),
        ]
    )
    said = answer(say("one two three"), request)
    # system 2 + user 3 + tool call (1 for the name, 2 for '{"a":' '1}') + tool result 2
    assert said.usage.input_tokens == 10
    assert said.usage.output_tokens == 3
    called = answer(call_tool("fetch", url="x"), request)
    assert called.usage.output_tokens == 1 + 2  # the name, then '{"url":' and '"x"}'
    assert answer(malformed.empty(), request).usage.output_tokens == 0


# --------------------------------------------------------------------------- failure steps


def test_fail_with_an_instance_raises_that_very_instance_every_time() -> None:
    error = ConnectionError("reset by peer")
    model = ScriptedModel([fail(error)], on_exhausted="repeat_last")
    for _ in range(3):
        with pytest.raises(ConnectionError) as info:
            model.request(make_request())
        assert info.value is error


def test_fail_with_a_class_raises_a_new_instance_each_time() -> None:
    model = ScriptedModel([fail(TimeoutError)], on_exhausted="repeat_last")
    seen = []
    for _ in range(2):
        with pytest.raises(TimeoutError) as info:
            model.request(make_request())
        seen.append(info.value)
    assert seen[0] is not seen[1]
    assert type(seen[0]) is TimeoutError


@pytest.mark.parametrize(
    ("error_class", "status"),
    [(RateLimitError, 429), (ModelAuthError, 401), (ModelServerError, 503), (ModelHTTPError, 400)],
)
def test_fail_with_a_taxonomy_http_class_fills_in_a_fitting_status(
    error_class: type[ModelHTTPError], status: int
) -> None:
    error = raised(fail(error_class))
    assert type(error) is error_class
    assert isinstance(error, ModelHTTPError)
    assert error.status == status
    assert error.model == "flaky"


def test_fail_with_a_model_error_class_names_the_model() -> None:
    error = raised(fail(ModelTimeoutError))
    assert isinstance(error, ModelTimeoutError)
    assert error.model == "flaky"


@pytest.mark.parametrize("bad", [503, "boom", None, int])
def test_fail_rejects_what_is_not_an_exception(bad: object) -> None:
    with pytest.raises(UsageError, match="exception"):
        fail(bad)  # type: ignore[arg-type]


def test_fail_rejects_a_class_that_needs_more_than_a_message() -> None:
    class NeedsCode(Exception):
        def __init__(self, message: str, code: int) -> None:
            super().__init__(message)
            self.code = code

    with pytest.raises(UsageError, match=r"pass an instance instead: fail\(NeedsCode"):
        fail(NeedsCode)


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (429, RateLimitError),
        (401, ModelAuthError),
        (403, ModelAuthError),
        (500, ModelServerError),
        (503, ModelServerError),
        (529, ModelServerError),
        (400, ModelHTTPError),
        (404, ModelHTTPError),
    ],
)
def test_fail_http_raises_the_error_for_its_status(
    status: int, error_class: type[ModelHTTPError]
) -> None:
    error = raised(fail.http(status, body="details"))
    assert type(error) is error_class
    assert isinstance(error, ModelHTTPError)
    assert error.status == status
    assert error.body == "details"
    assert error.model == "flaky"
    assert f"HTTP {status}" in str(error)


def test_fail_http_raises_a_new_error_for_every_call() -> None:
    model = ScriptedModel([fail.http(503)], on_exhausted="repeat_last")
    errors = []
    for _ in range(2):
        with pytest.raises(ModelServerError) as info:
            model.request(make_request())
        errors.append(info.value)
    assert errors[0] is not errors[1]


@pytest.mark.parametrize("status", [200, 204, 302, 399, 600, "503", True])
def test_fail_http_rejects_a_status_that_is_not_an_error(status: object) -> None:
    with pytest.raises(UsageError, match="400 to 599"):
        fail.http(status)  # type: ignore[arg-type]


def test_fail_rate_limit_carries_retry_after_as_attribute_and_header() -> None:
    error = raised(fail.rate_limit(retry_after=2))
    assert isinstance(error, RateLimitError)
    assert error.status == 429
    assert error.retry_after == 2.0
    assert error.headers == {"retry-after": "2"}
    assert classify(error).retryable


def test_fail_rate_limit_without_retry_after() -> None:
    error = raised(fail.rate_limit())
    assert isinstance(error, RateLimitError)
    assert error.retry_after is None
    assert error.headers == {}


@pytest.mark.parametrize("retry_after", [-1, "2", True])
def test_fail_rate_limit_rejects_a_bad_retry_after(retry_after: object) -> None:
    with pytest.raises(UsageError, match="retry_after"):
        fail.rate_limit(retry_after=retry_after)  # type: ignore[arg-type]


def test_fail_timeout_raises_a_retryable_model_timeout() -> None:
    error = raised(fail.timeout())
    assert isinstance(error, ModelTimeoutError)
    assert isinstance(error, TimeoutError)
    assert error.model == "flaky"
    assert classify(error).retryable


def test_fail_connection_raises_a_retryable_transport_error() -> None:
    error = raised(fail.connection())
    assert isinstance(error, ModelTransportError)
    assert isinstance(error, ConnectionError)
    assert classify(error).retryable


# --------------------------------------------------------------------------- malformed steps


def test_malformed_tool_args_calls_the_first_offered_tool_with_the_raw_text() -> None:
    [call] = answer(malformed.tool_args('{"url": '), make_request(tools=("fetch", "x"))).tool_calls
    assert (call.name, call.arguments) == ("fetch", '{"url": ')


def test_malformed_tool_args_can_name_its_tool() -> None:
    [call] = answer(malformed.tool_args("{bad", tool="parse")).tool_calls
    assert (call.name, call.arguments) == ("parse", "{bad")


def test_malformed_tool_args_refuses_a_tool_that_is_not_offered() -> None:
    # A misspelt name made the call an unknown tool's: the test passed on the wrong path
    with pytest.raises(UsageError) as caught:
        answer(malformed.tool_args("{bad", tool="fecth"))
    message = str(caught.value)
    assert "malformed.tool_args('{bad', tool='fecth'): the request offers no tool 'fecth'" in (
        message
    )
    assert "did you mean 'fetch'?" in message
    assert "(it offers: fetch, parse)" in message
    assert "malformed.unknown_tool('fecth')" in message


def test_malformed_tool_args_needs_a_tool_when_none_is_offered() -> None:
    with pytest.raises(UsageError, match="offers no tools"):
        answer(malformed.tool_args("{bad"), make_request(tools=()))


def test_malformed_unknown_tool_calls_a_tool_not_on_offer() -> None:
    [call] = answer(malformed.unknown_tool()).tool_calls
    assert call.name == "nonexistent_tool"
    [call] = answer(malformed.unknown_tool("teleport")).tool_calls
    assert call.name == "teleport"


def test_malformed_unknown_tool_refuses_a_tool_that_is_offered() -> None:
    with pytest.raises(UsageError, match="does offer a tool named 'fetch'"):
        answer(malformed.unknown_tool("fetch"))


def test_malformed_empty_is_an_empty_stop_answer() -> None:
    response = answer(malformed.empty())
    assert (response.text, response.tool_calls, response.finish_reason) == ("", [], "stop")


@pytest.mark.parametrize(
    ("step", "reason"),
    [(malformed.blocked(), "content_filter"), (malformed.blocked("safety"), "safety")],
)
def test_malformed_blocked_is_empty_with_its_finish_reason(step: Step, reason: str) -> None:
    response = answer(step)
    assert (response.text, response.tool_calls, response.finish_reason) == ("", [], reason)


def test_malformed_not_json_raises_malformed_response_holding_the_body() -> None:
    error = raised(malformed.not_json("<html>oops</html>"))
    assert isinstance(error, MalformedResponseError)
    assert "not JSON" in str(error)
    assert error.body == "<html>oops</html>"
    assert error.model == "flaky"


def test_malformed_not_json_has_an_html_default() -> None:
    error = raised(malformed.not_json())
    assert isinstance(error, MalformedResponseError)
    assert error.body.startswith("<html>")


def test_malformed_truncated_cuts_the_stream_of_a_streamed_call() -> None:
    error = raised(malformed.truncated(), make_request(stream=True))
    assert isinstance(error, ModelStreamError)
    assert "stream ended before the response was complete" in str(error)


def test_malformed_truncated_cuts_the_body_of_a_call_that_does_not_stream() -> None:
    # no stream to cut: what a client meets is half a JSON body, a malformed answer
    error = raised(malformed.truncated(), make_request())
    assert isinstance(error, MalformedResponseError)
    assert not isinstance(error, ModelStreamError)
    assert "the call does not stream: its body was cut" in str(error)
    with pytest.raises(json.JSONDecodeError):
        json.loads(error.body)


@pytest.mark.parametrize(
    "build",
    [
        lambda: malformed.tool_args(3),  # type: ignore[arg-type]
        lambda: malformed.tool_args("{", tool=""),
        lambda: malformed.unknown_tool(""),
        lambda: malformed.blocked(""),
        lambda: malformed.not_json(None),  # type: ignore[arg-type]
        lambda: say(3),  # type: ignore[arg-type]
        lambda: call_tool(""),
        lambda: call_tool("f", raw_args=3),  # type: ignore[arg-type]
        lambda: fail.http(500, body=3),  # type: ignore[arg-type]
    ],
)
def test_step_constructors_reject_bad_values(build: object) -> None:
    with pytest.raises(UsageError):
        build()  # type: ignore[operator]


def test_steps_are_frozen_values_with_readable_reprs() -> None:
    assert say("hi") == say("hi")
    assert hash(call_tool("f", a=1)) == hash(call_tool("f", a=1))
    with pytest.raises(AttributeError):
        say("hi").text = "bye"  # type: ignore[misc]
    assert repr(say("hi")) == "say('hi')"
    assert repr(fail.rate_limit(retry_after=2)) == "fail.rate_limit(retry_after=2.0)"
    assert repr(fail.http(503)) == "fail.http(503)"
    assert repr(malformed.blocked()) == "malformed.blocked('content_filter')"
    assert repr(call_tools([("a", {})])) == "call_tools([call_tool('a', '{}')])"
    assert (repr(fail), repr(malformed)) == ("fail", "malformed")


EVERY_STEP = [
    say("hi"),
    call_tool("fetch", url="x"),
    call_tool("parse", raw_args="{bad"),
    call_tools([("a", {}), malformed.tool_args("{", tool="b"), malformed.unknown_tool("c")]),
    fail(ValueError),
    fail.http(503),
    fail.http(500, "busy", retry_after=1),
    fail.rate_limit(retry_after=2),
    fail.rate_limit(),
    fail.timeout(),
    fail.connection(),
    malformed.tool_args("{"),
    malformed.unknown_tool(),
    malformed.empty(),
    malformed.blocked("safety"),
    malformed.not_json("<p>"),
    malformed.truncated(),
]


@pytest.mark.parametrize("step", EVERY_STEP, ids=repr)
def test_a_step_repr_is_the_expression_that_builds_it(step: Step) -> None:
    names: dict[str, object] = {"say": say, "call_tool": call_tool, "call_tools": call_tools}
    names |= {"fail": fail, "malformed": malformed, "ValueError": ValueError}
    assert eval(repr(step), names) == step


def test_a_tool_call_step_builds_its_tool_call() -> None:
    call = malformed.tool_args("{").tool_call(make_request(tools=("parse",)), "call_9")
    assert call == ToolCall(id="call_9", name="parse", arguments="{")


def test_scripted_model_repr() -> None:
    model = ScriptedModel([say("a")], name="m", strict=False)  # inspected, never run
    assert repr(model) == "ScriptedModel(name='m', steps=1, calls=0)"
    model = ScriptedModel.from_function(lambda request: "x")
    assert repr(model) == "ScriptedModel(name='scripted', function, calls=0)"


# --------------------------------------------------------------------------- recording


def test_requests_are_recorded_and_later_turns_do_not_change_them() -> None:
    model = ScriptedModel([call_tool("fetch", url="x"), say("done")])
    request = make_request("first")
    response = model.request(request)
    # An agent appends to the same list on the next turn.
    request.messages.append(response.message)
    request.messages.append(Message.tool_result("page", tool_call_id="call_1", name="fetch"))
    model.request(request)
    assert model.calls == 2
    assert [m.content for m in model.requests[0].messages] == ["first"]
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "tool"]
    assert model.requests[1].messages[-1].content == "page"
    assert [t.name for t in model.requests[0].tools] == ["fetch", "parse"]


def test_failed_calls_are_recorded_too() -> None:
    model = ScriptedModel([fail.http(503), say("ok")])
    with pytest.raises(ModelServerError):
        model.request(make_request("try 1"))
    assert model.request(make_request("try 2")).text == "ok"
    assert [r.messages[0].content for r in model.requests] == ["try 1", "try 2"]


def test_calls_remaining_and_reset() -> None:
    model = ScriptedModel([say("a"), say("b")], strict=False)  # counts a partial run
    assert (model.calls, model.remaining) == (0, 2)
    model.request(make_request())
    assert (model.calls, model.remaining) == (1, 1)
    model.reset()
    assert (model.calls, model.remaining, model.requests) == (0, 2, [])
    assert model.request(make_request()).text == "a"


# --------------------------------------------------------------------------- exhaustion


def test_an_exhausted_script_raises_an_assertion_error_never_retried() -> None:
    model = ScriptedModel([say("one"), say("two")], name="analyst")
    model.request(make_request())
    model.request(make_request())
    with pytest.raises(ScriptExhaustedError) as info:
        model.request(make_request("please count the keys"))
    error = info.value
    assert isinstance(error, AssertionError)
    assert not isinstance(error, AgentFaultsError)
    assert classify(error).retryable is False
    message = str(error)
    assert "'analyst'" in message
    assert "2 steps" in message
    assert "please count the keys" in message
    assert 'on_exhausted="repeat_last"' in message
    assert (error.model, error.steps) == ("analyst", 2)
    assert error.request.messages[-1].content == "please count the keys"
    assert model.calls == 3


def test_exhaustion_message_names_a_tool_result_and_never_retries_on_transient_words() -> None:
    model = ScriptedModel([])
    request = ModelRequest(
        messages=[Message.tool_result("503 rate limit, timed out", tool_call_id="c", name="fetch")]
    )
    with pytest.raises(ScriptExhaustedError, match=r"0 steps.*tool 'fetch'.*503") as info:
        model.request(request)
    assert classify(info.value).retryable is False


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([], "the request had no messages"),
        (
            [Message.assistant("", [ToolCall(id="c", name="fetch"), ToolCall(id="d", name="x")])],
            "the last message was an assistant call to fetch, x",
        ),
        ([Message.user("word " * 100)], "the last message was user: 'word word"),
    ],
)
def test_exhaustion_message_describes_any_last_message(
    messages: list[Message], expected: str
) -> None:
    with pytest.raises(ScriptExhaustedError) as info:
        ScriptedModel([]).request(ModelRequest(messages=messages))
    assert expected in str(info.value)
    assert len(str(info.value)) < 400  # a long message is cut short


def test_repeat_last_answers_every_further_call_with_the_last_step() -> None:
    model = ScriptedModel([say("first"), say("again")], on_exhausted="repeat_last")
    texts = [model.request(make_request()).text for _ in range(4)]
    assert texts == ["first", "again", "again", "again"]
    assert (model.calls, model.remaining) == (4, 0)


def test_repeat_last_needs_a_step_to_repeat() -> None:
    with pytest.raises(UsageError, match="no step to repeat"):
        ScriptedModel([], on_exhausted="repeat_last")


def test_on_exhausted_is_validated() -> None:
    with pytest.raises(UsageError, match="'raise', 'repeat_last'"):
        ScriptedModel([say("x")], on_exhausted="loop")  # type: ignore[arg-type]


@pytest.mark.parametrize("steps", [[say("ok"), 42], [None]])
def test_a_script_rejects_what_is_not_a_step(steps: list[object]) -> None:
    with pytest.raises(UsageError, match=r"step \d+ is"):
        ScriptedModel(steps)  # type: ignore[arg-type]


def test_a_single_step_is_not_a_script() -> None:
    with pytest.raises(UsageError, match="list of steps"):
        ScriptedModel(say("hi"))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- async


@pytest.mark.asyncio
async def test_arequest_behaves_like_request() -> None:
    model = ScriptedModel([call_tool("fetch", url="x"), fail.http(503), say("done")])
    response = await model.arequest(make_request("go"))
    assert response.tool_calls[0].id == "call_1"
    with pytest.raises(ModelServerError):
        await model.arequest(make_request())
    assert (await model.arequest(make_request())).text == "done"
    with pytest.raises(ScriptExhaustedError):
        await model.arequest(make_request())
    assert model.calls == 4
    assert model.requests[0].messages[0].content == "go"


# --------------------------------------------------------------------------- from_function


def test_from_function_asks_the_function_for_each_step() -> None:
    seen: list[str] = []

    def reply(request: ModelRequest) -> Step | str:
        last = request.messages[-1]
        seen.append(last.role)
        if last.role == "tool":
            return f"the page says {last.content}"
        return call_tool("fetch", url="https://example.com")

    model = ScriptedModel.from_function(reply, name="fn")
    request = make_request("read the page")
    first = model.request(request)
    assert first.tool_calls[0].id == "call_1"
    assert first.model == "fn"
    request.messages += [
        first.message,
        Message.tool_result("hello", tool_call_id="call_1", name="fetch"),
    ]
    assert model.request(request).text == "the page says hello"
    assert seen == ["user", "tool"]
    assert model.calls == 2
    assert model.steps == ()


def test_from_function_can_fail_through_steps_or_by_raising() -> None:
    def reply(request: ModelRequest) -> Step:
        if len(request.messages) == 1:
            return fail.rate_limit(retry_after=1)
        raise ModelTransportError("down")

    model = ScriptedModel.from_function(reply)
    with pytest.raises(RateLimitError):
        model.request(make_request("a"))
    with pytest.raises(ModelTransportError, match="down"):
        model.request(make_request("a", "b"))


def test_from_function_rejects_a_result_that_is_not_a_step() -> None:
    model = ScriptedModel.from_function(lambda request: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(UsageError, match="forget to return"):
        model.request(make_request())


def test_from_function_needs_a_callable() -> None:
    with pytest.raises(UsageError, match="callable"):
        ScriptedModel.from_function("say hi")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_from_function_with_a_sync_function_works_on_the_async_path() -> None:
    model = ScriptedModel.from_function(lambda request: call_tool("fetch"))
    assert (await model.arequest(make_request())).tool_calls[0].id == "call_1"


@pytest.mark.asyncio
async def test_from_function_awaits_an_async_function() -> None:
    async def reply(request: ModelRequest) -> Step:
        return say(f"echo: {request.messages[-1].content}")

    model = ScriptedModel.from_function(reply)
    assert (await model.arequest(make_request("ping"))).text == "echo: ping"
    assert model.calls == 1


def test_from_function_with_an_async_function_needs_the_async_path() -> None:
    async def reply(request: ModelRequest) -> Step:
        return say("never")

    model = ScriptedModel.from_function(reply)
    # The coroutine is closed, so no "never awaited" warning (warnings are errors here).
    with pytest.raises(UsageError, match=r"arequest\(\).*agent\.arun"):
        model.request(make_request())


class ReadyAwaitable:
    """An awaitable that is not a coroutine, as some frameworks return."""

    def __init__(self, step: Step) -> None:
        self.step = step

    def __await__(self) -> Generator[None, None, Step]:
        yield from ()  # ready at once: nothing to wait for
        return self.step


def test_from_function_rejects_any_awaitable_on_the_sync_path() -> None:
    model = ScriptedModel.from_function(lambda request: ReadyAwaitable(say("x")))
    with pytest.raises(UsageError, match="async function"):
        model.request(make_request())


@pytest.mark.asyncio
async def test_from_function_awaits_any_awaitable_on_the_async_path() -> None:
    model = ScriptedModel.from_function(lambda request: ReadyAwaitable(say("ready")))
    assert (await model.arequest(make_request())).text == "ready"


# --------------------------------------------------------------------------- from_file


def test_from_file_json_analyst_script() -> None:
    model = ScriptedModel.from_file(SCRIPTS / "json_analyst.json")
    assert model.name == "json-analyst"
    assert model.on_exhausted == "raise"
    request = make_request(tools=("count_keys",))
    calls = [model.request(request).tool_calls[0] for _ in range(2)]
    assert [json.loads(c.arguments) for c in calls] == [
        {"json": "{name: world}"},
        {"json": '{"name": "world"}'},
    ]
    assert model.request(request).text == "1"
    with pytest.raises(ScriptExhaustedError, match="3 steps"):
        model.request(request)


def test_from_file_yaml_cascade_script() -> None:
    model = ScriptedModel.from_file(str(SCRIPTS / "cascade.yaml"))
    assert model.name == "cascade"
    request = make_request()
    with pytest.raises(RateLimitError) as info:
        model.request(request)
    assert info.value.retry_after == 2.0
    with pytest.raises(ModelServerError) as server_info:
        model.request(request)
    assert server_info.value.status == 529
    assert "overloaded_error" in server_info.value.body
    with pytest.raises(ModelTimeoutError):
        model.request(request)
    with pytest.raises(ModelTransportError):
        model.request(request)
    [call] = model.request(request).tool_calls
    assert (call.id, call.name) == ("call_1", "fetch")
    assert model.request(request).text == "The report says revenue grew 12%."


def test_from_file_every_step_script_matches_the_python_steps() -> None:
    model = ScriptedModel.from_file(SCRIPTS / "every_step.json", strict=False)  # never run
    assert model.steps == (
        say("plain strings are say steps"),
        say("hello"),
        call_tool("fetch", url="https://example.com"),
        call_tool("parse", raw_args="{bad"),
        call_tools(
            [
                call_tool("fetch", url="https://a.example"),
                ("fetch", {"url": "https://b.example"}),
                malformed.tool_args('{"url": ', tool="fetch"),
            ]
        ),
        fail.http(503, "upstream busy"),
        fail.http(401),
        fail.rate_limit(retry_after=2),
        fail.timeout(),
        fail.connection(),
        malformed.tool_args('{"url": '),
        malformed.unknown_tool("delete_everything"),
        malformed.empty(),
        malformed.blocked("safety"),
        malformed.not_json("<html>502 Bad Gateway</html>"),
        malformed.truncated(),
    )


def test_from_file_every_step_script_runs_end_to_end() -> None:
    model = ScriptedModel.from_file(SCRIPTS / "every_step.json")
    outcomes: list[str] = []
    for _ in model.steps:
        try:
            response = model.request(make_request())
        except Exception as exc:
            outcomes.append(type(exc).__name__)
        else:
            outcomes.append(response.finish_reason or "")
    assert outcomes == [
        "stop",
        "stop",
        "tool_calls",
        "tool_calls",
        "tool_calls",
        "ModelServerError",
        "ModelAuthError",
        "RateLimitError",
        "ModelTimeoutError",
        "ModelTransportError",
        "tool_calls",
        "tool_calls",
        "stop",
        "safety",
        "MalformedResponseError",
        "MalformedResponseError",  # truncated, on a call that does not stream: a cut body
    ]
    assert model.remaining == 0


def test_from_file_arguments_override_the_file(tmp_path: Path) -> None:
    path = tmp_path / "loop.json"
    path.write_text('["only"]')
    model = ScriptedModel.from_file(path, name="looper", on_exhausted="repeat_last")
    assert model.name == "looper"
    assert [model.request(make_request()).text for _ in range(2)] == ["only", "only"]
    assert ScriptedModel.from_file(path, strict=False).name == "scripted:loop"  # never run


BAD_JSON_SCRIPTS = [
    (
        '{"steps": [{"say": "ok"}, {"sey": "hi"}]}',
        r"steps\[1\]: has no action key \(keys: 'sey'\); "
        r"the actions are: call_tool, call_tools, fail, malformed, say",
    ),
    ('{"steps": [{"say": "hi", "fail": 503}]}', r"steps\[0\]: has 'fail' and 'say'; one action"),
    (
        '{"steps": [{"call_tool": "f", "arguments": {}}]}',
        r"steps\[0\]: unknown key 'arguments'; valid keys: args, call_tool, raw_args",
    ),
    ('{"steps": [{"call_tool": "f", "args": [1]}]}', r"steps\[0\]: 'args' must be an object"),
    ('{"steps": [{"call_tool": "f", "raw_args": 3}]}', r"steps\[0\]: 'raw_args' must be a str"),
    (
        '{"steps": [{"call_tool": "f", "args": {"a": 1}, "raw_args": "{}"}]}',
        r"steps\[0\]: call_tool\('f'\) got raw_args and keyword",
    ),
    (
        '{"steps": [{"fail": "explode"}]}',
        r"steps\[0\]: unknown fail kind 'explode'; "
        r"valid kinds: connection, http, rate_limit, timeout",
    ),
    ('{"steps": [{"fail": "http"}]}', r"steps\[0\]: a 'fail': 'http' step needs a 'status'"),
    (
        '{"steps": [{"fail": "timeout", "seconds": 3}]}',
        r"steps\[0\]: unknown key 'seconds'; valid keys: fail$",
    ),
    ('{"steps": [{"fail": 200}]}', r"steps\[0\]: fail.http\(\) takes an error status"),
    (
        '{"steps": [{"fail": "rate_limit", "retry_after": "soon"}]}',
        r"steps\[0\]: .*retry_after must be seconds",
    ),
    (
        '{"steps": [{"malformed": "garbled"}]}',
        r"steps\[0\]: unknown malformed kind 'garbled'; "
        r"valid kinds: blocked, empty, not_json, tool_args, truncated, unknown_tool",
    ),
    (
        '{"steps": [{"malformed": "empty", "text": "x"}]}',
        r"steps\[0\]: unknown key 'text'; valid keys: malformed$",
    ),
    ('{"steps": [{"call_tools": []}]}', r"steps\[0\]: 'call_tools' must be a non-empty list"),
    (
        '{"steps": [{"call_tools": [{"say": "x"}]}]}',
        r"steps\[0\]\.call_tools\[0\]: .* is not one tool call",
    ),
    (
        '{"steps": [{"call_tools": [{"call_tool": "f", "bad": 1}]}]}',
        r"steps\[0\]\.call_tools\[0\]: unknown key 'bad'",
    ),
    ('{"steps": [{"say": 3}]}', r"steps\[0\]: 'say' must be a string"),
    ('{"steps": [7]}', r"steps\[0\]: a step is an object"),
    ('{"steps": {"say": "hi"}}', r"steps: must be a list"),
    (
        '{"script": []}',
        r"top level: unknown key 'script'; valid keys: description, name, on_exhausted, steps",
    ),
    ('{"name": "x"}', r"top level: no 'steps' list"),
    ('{"steps": [], "on_exhausted": "loop"}', r"on_exhausted: 'loop'; use one of raise, repeat"),
    ('{"steps": [], "on_exhausted": "repeat_last"}', r"steps: the list is empty"),
    ('{"steps": [], "name": 5}', r"top level: 'name' must be a string"),
    ("42", r"top level: expected an object with 'steps'"),
    ('{"steps": [}', r"is not valid JSON: .*line 1, column 12"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_JSON_SCRIPTS)
def test_from_file_bad_json_names_the_file_the_step_and_the_valid_keys(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=expected) as info:
        ScriptedModel.from_file(path)
    assert str(path) in str(info.value)


def test_from_file_bad_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("steps:\n  - say: [unclosed\n")
    with pytest.raises(UsageError, match=r"bad\.yml is not valid YAML"):
        ScriptedModel.from_file(path)
    path.write_text("steps:\n  - malformed: tool_args\n    rwa: '{'\n")
    with pytest.raises(UsageError, match=r"bad\.yml: steps\[0\]: unknown key 'rwa'; valid keys"):
        ScriptedModel.from_file(path)


def test_from_file_yaml_without_pyyaml_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("steps: [hi]\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # makes `import yaml` fail
    expected = r"script\.yaml is YAML, which needs PyYAML: pip install pyyaml"
    with pytest.raises(UsageError, match=expected):
        ScriptedModel.from_file(path)


def test_from_file_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "script.toml"
    path.write_text("steps = []")
    expected = r"unknown file type '\.toml'; use \.json, \.yaml or \.yml"
    with pytest.raises(UsageError, match=expected):
        ScriptedModel.from_file(path)
    with pytest.raises(UsageError, match=r"cannot read script .*missing\.json"):
        ScriptedModel.from_file(tmp_path / "missing.json")
