"""google-genai: tool faults in automatic function calling (AFC), at each function's call.

With Python functions as tools (``GenerateContentConfig(tools=[get_weather])``), the SDK
calls each function the model asks for, sync or async (a sync one on a worker thread
under ``client.aio``), and sends back ``{"result": ...}``, or ``{"error": ...}`` when it
raised, wrapped in its ``FunctionInvocationError`` message. The SDK's
``invoke_function_from_dict_args`` (and its async twin) is hooked to call, in the
function's place, a wrapper of the same name and signature that makes the call one
attempt (`run_attempt` / `arun_attempt`, ``framework="google_genai"``):

- ``raises=`` raises from inside the call, as the function would: the model reads the
  SDK's error text, and may call again (a later model response: the model's retry);
- ``returns=af.ToolFailure(...)`` raises an error with the failure's text, which the
  model reads in the same way;
- ``returns=<value>`` is the function's result;
- a call missing a required argument (the function would raise ``TypeError`` before its
  body runs) is traced but takes no fault.

Which model response asked for the call (`Site.turn`) is told by hooking
``get_function_response_parts`` (and its async twin), which answers one response's calls.
MCP sessions given as tools are not functions and are not hooked. Imported only by
`install`, once google-genai is imported.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final, NoReturn

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.testing._frameworks._core import (
    Site,
    arun_attempt,
    failure_text,
    run_attempt,
)
from pytest_agentfaults.testing._frameworks._hook import Hook, hook_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "install"]

FRAMEWORK: Final = "google_genai"
_UNKNOWN: Final = Site()

#: the model response whose calls are being answered (`_answering`'s hook sets it)
_site: ContextVar[Site] = ContextVar("agentfaults_genai_site", default=_UNKNOWN)


def install() -> Callable[[], None]:
    """Hook the SDK's function invocation and its per-response answering; returns the undo."""
    from google.genai import _extra_utils  # noqa: PLC0415 - google-genai is optional, loaded on use

    def hooks() -> Iterator[Hook]:
        for name, make in (
            ("invoke_function_from_dict_args", _sync_invoke),
            ("invoke_function_from_dict_args_async", _async_invoke),
        ):
            missing = f"google-genai's _extra_utils has no {name} in this version"
            yield _extra_utils, name, make, missing
        # which response asked: a refinement, so a version without these still has faults
        for name, make in (
            ("get_function_response_parts", _sync_answering),
            ("get_function_response_parts_async", _async_answering),
        ):
            yield _extra_utils, name, make, None

    return hook_all(hooks(), "the google-genai hooks")


def _sync_invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    def invoke(args: Any, function_to_invoke: Callable[..., Any]) -> Any:
        __tracebackhide__ = True
        name, site = _name(function_to_invoke), _site.get()

        @functools.wraps(function_to_invoke)
        def attempt(**kwargs: Any) -> Any:
            __tracebackhide__ = True
            return run_attempt(
                FRAMEWORK,
                name,
                kwargs,
                lambda: function_to_invoke(**kwargs),
                _failed,
                site,
                faultable=_takes(function_to_invoke, kwargs),
            )

        return original(args, attempt)

    return invoke


def _async_invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    async def invoke(args: Any, function_to_invoke: Callable[..., Any]) -> Any:
        __tracebackhide__ = True
        name, site = _name(function_to_invoke), _site.get()

        @functools.wraps(function_to_invoke)
        async def attempt(**kwargs: Any) -> Any:
            __tracebackhide__ = True
            return await arun_attempt(
                FRAMEWORK,
                name,
                kwargs,
                lambda: function_to_invoke(**kwargs),
                _failed,
                site,
                faultable=_takes(function_to_invoke, kwargs),
            )

        return await original(args, attempt)

    return invoke


def _sync_answering(original: Callable[..., Any]) -> Callable[..., Any]:
    def get_function_response_parts(response: Any, function_map: Any) -> Any:
        token = _site.set(Site(turn=object()))  # one model response: its calls are parallel
        try:
            return original(response, function_map)
        finally:
            _site.reset(token)

    return get_function_response_parts


def _async_answering(original: Callable[..., Any]) -> Callable[..., Any]:
    async def get_function_response_parts_async(response: Any, function_map: Any) -> Any:
        token = _site.set(Site(turn=object()))
        try:
            return await original(response, function_map)
        finally:
            _site.reset(token)

    return get_function_response_parts_async


def _name(function: Callable[..., Any]) -> str:
    """The name the model calls the function by: the SDK's declaration uses ``__name__``."""
    return str(getattr(function, "__name__", "") or repr(function))


def _takes(function: Callable[..., Any], kwargs: Mapping[str, Any]) -> bool:
    """Whether ``function`` can be called with ``kwargs``: every required argument given."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return all(
        p.name in kwargs
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )


class _FunctionFailed(Exception):
    """An `af.ToolFailure` as a function's error: the SDK sends its text to the model."""


def _failed(failure: ToolFailure) -> NoReturn:
    raise _FunctionFailed(failure_text(failure))
