"""Structured output: validate the model's final answer against ``output_type``."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import MalformedResponseError, UsageError
from pytest_agentfaults.runtime.models.base import ModelResponse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "BLOCKED_REASONS",
    "OutputSpec",
    "answer_failure",
    "check_substitute",
    "preview",
    "read_answer",
    "render_result",
    "soft_failure",
    "unfence",
]

BLOCKED_REASONS = frozenset(
    {"content_filter", "safety", "blocked", "refusal", "recitation", "prohibited_content"}
)


class OutputSpec:
    """How to check a final answer: a pydantic `TypeAdapter` and its JSON schema."""

    __slots__ = ("_adapter", "output_type", "schema")

    def __init__(self, output_type: Any) -> None:
        try:
            self._adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            self.schema: dict[str, Any] = self._adapter.json_schema()
        except Exception as exc:
            raise UsageError(
                f"output_type={output_type!r} cannot be validated by pydantic ({exc}); use a "
                "pydantic model, a dataclass, a TypedDict or a JSON-friendly type"
            ) from exc
        self.output_type = output_type

    def parse(self, text: str) -> Any:
        """The validated value of ``text``, or `MalformedResponseError` saying what is wrong."""
        body = unfence(text)
        try:
            return self._adapter.validate_json(body)
        except ValidationError as exc:
            problems = _problems(exc)
            raise MalformedResponseError(
                f"the answer does not match output_type {_type_name(self.output_type)}: {problems}",
                body=text,
            ) from exc

    @property
    def type_name(self) -> str:
        """The output type's name, as messages show it."""
        return _type_name(self.output_type)

    def check(self, value: Any) -> Any:
        """``value`` validated: JSON text is parsed like an answer, anything else as Python."""
        if isinstance(value, str):
            return self.parse(value)
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise MalformedResponseError(_problems(exc)) from exc

    def correction(self, failure: MalformedResponseError) -> str:
        """The user message that asks the model to correct its answer."""
        return (
            f"Your answer could not be used: {failure}.\n"
            "Reply with only a JSON value that matches this JSON schema:\n"
            f"{json.dumps(self.schema)}"
        )


def check_substitute(
    agent: str, spec: OutputSpec | None, output: Any, error: BaseException
) -> None:
    """Fail fast when ``on_llm_error`` substitutes an answer the ``output_type`` refuses.

    ``spec`` None is the default ``output_type=str``: the answer must be a str.
    """
    shown = repr(output)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    said = (
        f"agent {agent!r}: on_llm_error answered {type(error).__name__} with "
        f"LlmErrorDecision.respond_with({shown})"
    )
    if spec is None:
        if not isinstance(output, str):
            raise UsageError(
                f"{said}, but the agent's output_type str needs a str; return text, or rethrow()"
            )
        return
    try:
        spec.check(output)
    except MalformedResponseError as exc:
        raise UsageError(
            f"{said}, which is not a valid {spec.type_name}: {exc}; return an instance of it "
            "(or a dict / JSON text that validates), or rethrow()"
        ) from exc


def soft_failure(response: ModelResponse, model: str) -> MalformedResponseError | None:
    """The error a blocked or empty final answer amounts to (None for a usable answer)."""
    message = response.message
    return answer_failure(message.tool_calls, message.content, response.finish_reason, model)


def answer_failure(
    tool_calls: list[Any], content: str, finish_reason: str | None, model: str
) -> MalformedResponseError | None:
    """`soft_failure` of an answer given by its parts (a run reads them once per answer)."""
    if tool_calls:
        return None
    reason = (finish_reason or "").lower()
    if reason in BLOCKED_REASONS:
        return MalformedResponseError(
            f"model {model!r} blocked its answer (finish_reason={finish_reason!r})",
            body=content,
            model=model,
        )
    if not content.strip():
        return MalformedResponseError(
            f"model {model!r} returned an empty answer with no tool calls "
            f"(finish_reason={finish_reason!r})",
            model=model,
        )
    return None


def unfence(text: str) -> str:
    """``text`` without a Markdown code fence around it (models like to fence JSON)."""
    body = text.strip()
    if body.startswith("```"):
        # Models like to fence JSON; the fence is not part of the answer.
        body = body.strip("`").strip()
        if body[:4].lower() == "json":
            body = body[4:]
    return body.strip()


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    )


def _type_name(output_type: Any) -> str:
    return str(getattr(output_type, "__name__", output_type))


def render_result(result: Any) -> str:
    """The string the model sees for a successful result: a str as is, anything else JSON.

    A value JSON cannot hold (bytes that are not UTF-8, a cycle, an object whose repr
    raises) is shown as a JSON string of its repr: the tool has run, and the run goes on.
    """
    if isinstance(result, str):
        return result
    try:
        return to_json(result, fallback=repr, inf_nan_mode="null").decode()
    except PydanticSerializationError:
        return json.dumps(_safe_repr(result))


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__: the one every object has
        return object.__repr__(value)


def preview(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters for an event's ``detail``."""
    text = text.replace("\n", " ")
    if len(text) <= limit:
        return text  # the recorder redacts it
    # redacted before it is cut: a key cut short no longer looks like one
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_answer(response: ModelResponse, model: str) -> tuple[str | None, int, int, str]:
    """What a run reads of an answer: its finish reason, its token counts, its event detail.

    Raises the error a blocked or empty final answer amounts to (`answer_failure`). A
    `ModelResponse`'s fields are read from each model's ``__dict__``, once: an attribute
    read of a pydantic model goes through its ``__getattr__`` hook (~400 instructions), and
    a turn read eleven of them.
    """
    exact = type(response) is ModelResponse
    if exact:
        fields = response.__dict__
        message = fields["message"].__dict__
        calls, content, finish = message["tool_calls"], message["content"], fields["finish_reason"]
    else:  # another class (a subclass, a look-alike): through its attributes, as ever
        said = response.message
        calls, content, finish = said.tool_calls, said.content, response.finish_reason
    if calls:  # an answer that calls a tool is never a soft failure
        shown = "tool calls: " + ", ".join([call.name for call in calls])
    else:
        error = answer_failure(calls, content, finish, model)
        if error is not None:
            raise error
        shown = preview(content)
    if exact:
        usage = fields["usage"].__dict__
        return finish, usage["input_tokens"], usage["output_tokens"], shown
    counted = response.usage
    return finish, counted.input_tokens, counted.output_tokens, shown
