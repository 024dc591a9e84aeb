"""``@pytest.mark.inject_fault(...)``: the marker's keyword arguments into a validated `Fault`.

Bad arguments raise `UsageError` naming the marker as written, the bad key and the valid
ones; the values go through the same fluent builders a test would call.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Final

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.testing._builders import (
    HttpFaultBuilder,
    ToolFaultBuilder,
    error_status,
    positive_int,
    probability_value,
    seconds_or_none,
)
from pytest_agentfaults.testing._fault import (
    HTTP_KIND_OPTIONS,
    HTTP_KINDS,
    LLM_FAULT_KINDS,
    LLM_KINDS,
    Fault,
    HTTPFault,
    LLMFault,
    ToolFault,
    check_url,
    short,
)
from pytest_agentfaults.testing._frameworks.function import check_path

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["parse_marker"]

_COMMON: Final = ("times", "at", "probability", "strict")
#: every option some llm= kind takes, in the order the kinds declare them
_LLM_OPTIONS: Final = tuple(dict.fromkeys(o for k in LLM_FAULT_KINDS.values() for o in k.options))
#: every option some http= status or kind takes
_HTTP_OPTIONS: Final = tuple(dict.fromkeys(o for k in HTTP_KIND_OPTIONS.values() for o in k))
#: the keys an http= marker takes (what `parse_marker` checks, over ``_VALID_KEYS["http"]``)
_HTTP_KEYS: Final = ("http", "url", "method", *_HTTP_OPTIONS, *_COMMON)
_VALID_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "tool": ("tool", "raises", "returns", "delay", "idempotent", *_COMMON),
    "function": ("function", "raises", "returns", "delay", "idempotent", *_COMMON),
    "http": ("http", "url", "method", "retry_after", *_COMMON),
    "llm": ("llm", *_LLM_OPTIONS, "agent", *_COMMON),
}
_TARGETS: Final = tuple(_VALID_KEYS)


def parse_marker(
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    label: str = "inject_fault",
    call: str | None = None,
) -> Fault:
    """Turn ``@pytest.mark.inject_fault(...)`` arguments into a validated `Fault`.

    Bad arguments raise `UsageError` naming the marker, the bad key and the valid ones.
    ``call`` names a function given the marker's arguments (``"faults.inject_fault"``),
    which messages and the fault's ``source`` then show instead of the marker.
    """
    __tracebackhide__ = True
    shown = _marker_repr(label, args, kwargs, call)
    if args:
        raise UsageError(
            f"{shown}: takes keyword arguments only, such as tool='fetch', http=503 or "
            "llm='rate_limit'"
        )
    targets = [t for t in _TARGETS if t in kwargs]
    if len(targets) != 1:
        problem = "has no target" if not targets else f"has {len(targets)} targets"
        raise UsageError(
            f"{shown} {problem}: give exactly one of tool=..., function=..., http=..., "
            "llm=... (stack several markers for several faults)"
        )
    target = targets[0]
    valid = _HTTP_KEYS if target == "http" else _VALID_KEYS[target]
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise UsageError(
            f"{shown}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))} for a {target} fault"
            f"{_closest_key(unknown[0], valid)}; valid keys: {', '.join(valid)}"
        )
    common = _common(kwargs, shown)
    if target in ("tool", "function"):
        return _parse_tool(kwargs, shown, common)
    if target == "http":
        return _parse_http(kwargs, shown, common)
    return _parse_llm(kwargs, shown, common)


def _common(kwargs: Mapping[str, Any], shown: str) -> dict[str, Any]:
    """The options every fault takes, validated: times, at, probability, strict, source."""
    __tracebackhide__ = True
    common: dict[str, Any] = {
        "source": shown,
        "times": positive_int(kwargs.get("times", 1), "times", shown),
        "at": positive_int(kwargs.get("at", 1), "at", shown),
    }
    if kwargs.get("probability") is not None:
        common["probability"] = probability_value(kwargs["probability"], shown)
    strict = kwargs.get("strict", True)
    if not isinstance(strict, bool):
        raise UsageError(f"{shown}: strict= must be True or False, got {strict!r}")
    common["strict"] = strict
    return common


def _parse_tool(kwargs: Mapping[str, Any], shown: str, common: dict[str, Any]) -> ToolFault:
    __tracebackhide__ = True
    by_path = "function" in kwargs
    if by_path:
        name = check_path(kwargs["function"], shown)
    else:
        name = kwargs["tool"]
        if isinstance(name, BaseTool):  # tool=fetch, the @af.tool itself: its name
            name = name.name
        if not isinstance(name, str) or not name:
            raise UsageError(f"{shown}: tool= must be a tool name (str), got {name!r}")
    actions = [k for k in ("raises", "returns", "delay") if k in kwargs]
    if len(actions) != 1:
        raise UsageError(
            f"{shown}: a {'function' if by_path else 'tool'} fault needs exactly one of "
            f"raises=..., returns=..., delay=... (got {', '.join(actions) or 'none'})"
        )
    fault = ToolFault(tool=name, function=by_path, **common)
    builder = ToolFaultBuilder(fault)
    builder.noting = False  # the marker is what the test wrote
    getattr(builder, actions[0])(kwargs[actions[0]])
    if "idempotent" in kwargs:
        builder.idempotent(kwargs["idempotent"])
    return fault


def _parse_http(kwargs: Mapping[str, Any], shown: str, common: dict[str, Any]) -> HTTPFault:
    __tracebackhide__ = True
    spec = kwargs["http"]
    url, method = kwargs.get("url"), kwargs.get("method")
    if url is not None and not isinstance(url, str):
        raise UsageError(f"{shown}: url= must be a str, got {url!r}")
    check_url(url, shown)
    if method is not None and not isinstance(method, str):
        raise UsageError(f"{shown}: method= must be a str such as 'POST', got {method!r}")
    fault = HTTPFault(url=url, method=method.upper() if method else None, **common)
    builder = HttpFaultBuilder(fault)
    builder.noting = False
    is_status = isinstance(spec, int) and not isinstance(spec, bool)
    if not is_status and spec not in HTTP_KINDS:
        raise UsageError(
            f"{shown}: http= must be a status code (e.g. 503) or one of "
            f"{', '.join(HTTP_KINDS)}; got {spec!r}{_other_keyword(spec, 'http')}"
        )
    allowed = HTTP_KIND_OPTIONS.get("status" if is_status else spec, ())
    options = {key: kwargs[key] for key in _HTTP_OPTIONS if key in kwargs}
    for key in options:
        if key not in allowed:
            takers = [
                "an HTTP status such as http=503" if kind == "status" else f"http={kind!r}"
                for kind, keys in HTTP_KIND_OPTIONS.items()
                if key in keys
            ]
            raise UsageError(
                f"{shown}: {key}= does not apply to http={spec!r}; it goes with {', '.join(takers)}"
            )
    if is_status:
        builder.status(spec, **options)
    else:
        getattr(builder, spec)(**options)  # each kind has the builder method of its name
    return fault


def _parse_llm(kwargs: Mapping[str, Any], shown: str, common: dict[str, Any]) -> LLMFault:
    __tracebackhide__ = True
    kind = kwargs["llm"]
    if kind not in LLM_FAULT_KINDS:
        raise UsageError(
            f"{shown}: llm= must be one of {', '.join(LLM_KINDS)}; got {kind!r}"
            + _other_keyword(kind, "llm")
        )
    allowed = LLM_FAULT_KINDS[kind].options
    options: dict[str, Any] = {}
    for key in _LLM_OPTIONS:
        if key in kwargs and key not in allowed:
            raise UsageError(f"{shown}: {key}= does not apply to llm={kind!r}")
        if key in kwargs:
            options[key] = kwargs[key]
    if "retry_after" in options:
        options["retry_after"] = seconds_or_none(options["retry_after"], "retry_after", shown)
    if "status" in options:
        options["status"] = error_status(options["status"], shown)
    if "args" in options and not isinstance(options["args"], str):
        raise UsageError(
            f"{shown}: args= is the raw arguments text the model sends, a str; "
            f"got {options['args']!r}, e.g. args='{{\"query\": '"
        )
    agent = kwargs.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent):
        raise UsageError(f"{shown}: agent= must be an agent's name (str), got {agent!r}")
    fault = LLMFault(kind=kind, options=options, agent=agent, **common)
    try:
        fault.step()
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{shown}: {exc}") from exc
    return fault


#: what to write instead of a kind of the other keyword, where a plain swap is not it
_INSTEAD: Final[Mapping[tuple[str, str], str]] = {
    ("http", "rate_limit"): "for a 429 use http=429 (retry_after=...) or http='quota'",
    ("http", "server_error"): "for a 5xx use http=503",
    ("http", "connection"): "for a dropped connection use http='connect_error' or http='reset'",
    ("http", "truncated"): "for a cut stream use http='truncated_stream'",
    ("llm", "truncated_stream"): "for a cut answer use llm='truncated'",
    ("llm", "connect_error"): "for a dropped connection use llm='connection'",
    ("llm", "reset"): "for a dropped connection use llm='connection'",
    ("llm", "read_error"): "for a dropped connection use llm='connection'",
}


#: keys people write for a marker key, and the key they mean
_SYNONYMS: Final = {
    "retries": "times",
    "count": "times",
    "raise": "raises",
    "raise_": "raises",
    "exception": "raises",
    "error": "raises",
    "return_value": "returns",
    "return_": "returns",
    "status": "http",
}
#: what a synonym is not
_SYNONYM_NOTES: Final = {
    "retries": " times= is how many calls the fault hits; retries are the agent's resilience=",
}


def _closest_key(key: str, valid: tuple[str, ...]) -> str:
    """`` (did you mean times=?)`` for a misspelt or synonym ``key`` ('' if none is close)."""
    meant = _SYNONYMS.get(key)
    if meant not in valid:
        close = difflib.get_close_matches(key, valid, n=1)
        meant = close[0] if close else None
    if meant is None:
        return ""
    note = _SYNONYM_NOTES.get(key, "")
    return f" (did you mean {meant}=?{note})"


def _other_keyword(value: object, keyword: str) -> str:
    """A hint for ``keyword=value`` when ``value`` belongs to the other keyword ('' if not)."""
    if keyword == "llm" and isinstance(value, int) and 400 <= value <= 599:
        return f"; for an HTTP status use llm='server_error', status={value} or http={value}"
    if not isinstance(value, str):
        return ""
    other = "llm" if keyword == "http" else "http"
    if value not in (LLM_FAULT_KINDS if other == "llm" else HTTP_KINDS):
        close = difflib.get_close_matches(value, LLM_KINDS if keyword == "llm" else HTTP_KINDS, n=1)
        return f"; did you mean {close[0]!r}?" if close else ""
    instead = _INSTEAD.get((keyword, value))
    if instead is not None:
        return f"; {instead}; {value!r} is an {other}= kind"
    return f"; {value!r} is an {other}= kind: write {other}={value!r}"


def _marker_repr(
    label: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], call: str | None = None
) -> str:
    parts = [repr(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
    return f"{call or '@pytest.mark.' + label}({', '.join(parts)})"
