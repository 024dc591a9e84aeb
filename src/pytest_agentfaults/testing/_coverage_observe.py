"""Fault coverage, one test: which fault classes fired on which tool, model and host.

`observe` reads a test's trace once, at its teardown, into plain JSON data: the rows it saw
and the fault classes that fired on each, injected by the kit or raised by the user's own
code. The data rides on the teardown report, so xdist workers' tests reach the controller
as local ones do; `_coverage.Matrix` adds them up there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pytest_agentfaults._network_policy import url_host
from pytest_agentfaults.runtime._verdict_http import refused
from pytest_agentfaults.runtime.events import Event
from pytest_agentfaults.testing._httpd import RECORDED_ORIGIN

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "HTTP",
    "INJECTED",
    "KIT",
    "LLM_SERVER",
    "MODEL_CLASSES",
    "TOOL_CLASSES",
    "USER",
    "classes_of",
    "observe",
]

#: Tool rows: the fault classes a tool's recovery can meet, with their column headers.
TOOL_CLASSES: Final = {
    "retryable": "retryable exception",
    "non_retryable": "non-retryable exception",
    "timeout": "timeout",
    "invalid_args": "invalid arguments",
    "tool_failure": "ToolFailure",
    "unknown_tool": "unknown tool",
}
#: Model and host rows: the fault classes a model call can meet.
MODEL_CLASSES: Final = {
    "rate_limit": "429 + Retry-After",
    "server_error": "5xx",
    "timeout": "timeout",
    "connection": "connection error",
    "stream_cut": "stream cut",
    "malformed_tool_args": "malformed tool args",
    "empty_or_blocked": "empty / blocked",
    "not_json": "not JSON",
}

# What an injected fault's label (an llm= kind, an http= kind) covers.
_LABELS: Final = {
    "rate_limit": "rate_limit",
    "quota": "rate_limit",
    "server_error": "server_error",
    "proxy_html": "server_error",
    "timeout": "timeout",
    "stall": "timeout",
    "slow_first_token": "timeout",
    "connection": "connection",
    "connect_error": "connection",
    "read_error": "connection",
    "reset": "connection",
    "truncated": "stream_cut",
    "truncated_stream": "stream_cut",
    "malformed_tool_args": "malformed_tool_args",
    "empty": "empty_or_blocked",
    "blocked": "empty_or_blocked",
    "not_json": "not_json",
    "malformed_body": "not_json",
}
# What an error a model call raised covers, by the taxonomy's type name.
_MODEL_ERRORS: Final = {
    "RateLimitError": "rate_limit",
    "ModelServerError": "server_error",
    "ModelTimeoutError": "timeout",
    "ModelTransportError": "connection",
    "ModelStreamError": "stream_cut",
    "MalformedResponseError": "not_json",
}
# What a bad answer a script served covers on the host that served it.
_SERVED: Final = {
    "invalid_args": "malformed_tool_args",
    "empty_or_blocked": "empty_or_blocked",
}
INJECTED: Final = "injected"
USER: Final = "user"
#: The framework of the kit's own tools and models, and that of host rows.
KIT: Final = "agentfaults"
HTTP: Final = "http"

#: The host of llm_server's requests in the trace.
LLM_SERVER: Final = url_host(RECORDED_ORIGIN) or "llm_server"

# A row seen: (kind, name, framework); a cell hit: (kind, name, framework, class, source).
_Row = tuple[str, str, str]
_Hit = tuple[str, str, str, str, str]


def classes_of(kind: str) -> dict[str, str]:
    """The columns of a row of ``kind`` (``tool``, ``model`` or ``host``)."""
    return TOOL_CLASSES if kind == "tool" else MODEL_CLASSES


# --------------------------------------------------------------------------- one test


def observe(events: Sequence[Event], scripted: Sequence[Sequence[Any]] = ()) -> dict[str, Any]:
    """What one test's trace exercised, as plain JSON data (it travels in reports).

    ``scripted``: the bad answers the test's scripts served (``llm_server``'s, and
    ``http_faults.script``'s), ``[fault_class, [tool names], host]``
    (`_plugin_coverage.scripted_bad_calls`). A framework refuses a bad call before a tool
    runs, mostly leaving no event: each covers its class on the test's one row of that
    tool name (none when two frameworks have a tool of that name in the test), as a
    model's real bad call does (``"user"``); a bad-arguments call also covers the host's
    malformed tool arguments, and an empty or blocked answer its empty / blocked cell.

    ``rows``: ``[kind, name, framework]`` of every tool, model and host seen (a row is
    its kind, framework and name: tools of one name in two frameworks are two rows);
    ``hits``: ``[kind, name, framework, class, source]`` with source ``"injected"`` (the
    kit's fault) or ``"user"`` (the user's own code raised it).
    """
    rows: set[_Row] = set()
    hits: set[_Hit] = set()
    faulted: set[tuple[str | None, str | None, int | None]] = set()
    model_of_run: dict[str, str] = {}
    tools_of_run: dict[str, set[tuple[str, str]]] = {}
    llm_fault_of_run: dict[str, str] = {}
    unknown_runs: list[tuple[str, str]] = []
    for event in events:
        kind = event.type
        if kind.startswith("tool."):
            _observe_tool(
                event,
                rows,
                hits,
                faulted,
                tools_of_run,
                unknown_runs,
                llm_fault_of_run,
                model_of_run,
            )
        elif kind.startswith("llm."):
            _observe_model(event, rows, hits, model_of_run, llm_fault_of_run)
        elif kind in ("http.request", "http.fault"):
            _observe_host(event, rows, hits)
    for run_id, source in unknown_runs:
        for tool, framework in tools_of_run.get(run_id, ()):
            hits.add(("tool", tool, framework, "unknown_tool", source))
    for fault_class, tools, host in scripted:
        _observe_scripted(str(fault_class), tools, str(host), rows, hits)
    return {"rows": sorted(list(row) for row in rows), "hits": sorted(list(h) for h in hits)}


def _observe_tool(
    event: Event,
    rows: set[_Row],
    hits: set[_Hit],
    faulted: set[tuple[str | None, str | None, int | None]],
    tools_of_run: dict[str, set[tuple[str, str]]],
    unknown_runs: list[tuple[str, str]],
    llm_fault_of_run: dict[str, str],
    model_of_run: dict[str, str],
) -> None:
    tool = event.tool
    if tool is None:
        return
    attempt = (event.run_id, event.call_id, event.attempt)
    if event.type == "tool.fault":
        faulted.add(attempt)
        return
    error = event.error
    if event.type == "tool.error" and error is not None and error.type == "UnknownToolError":
        source = INJECTED if llm_fault_of_run.get(event.run_id) == "unknown_tool" else USER
        unknown_runs.append((event.run_id, source))
        offered = event.field("offered")  # our runtime's: the tools the agent offered
        if isinstance(offered, list):
            run_tools = tools_of_run.setdefault(event.run_id, set())
            for name in offered:
                rows.add(("tool", str(name), KIT))
                run_tools.add((str(name), KIT))
        return
    if event.type not in ("tool.call", "tool.error", "tool.result"):
        return
    framework = str(event.field("framework") or KIT)
    rows.add(("tool", tool, framework))
    tools_of_run.setdefault(event.run_id, set()).add((tool, framework))
    if event.type != "tool.error" or error is None:
        return
    source = INJECTED if attempt in faulted else USER
    # the Agents SDK's ModelBehaviorError on a tool attempt: arguments it could not parse
    if error.kind == "validation" or error.type == "ModelBehaviorError":
        injected = llm_fault_of_run.get(event.run_id) == "malformed_tool_args"
        hits.add(("tool", tool, framework, "invalid_args", INJECTED if injected else USER))
        model = model_of_run.get(event.run_id)
        if model is not None:
            source = INJECTED if injected else USER
            hits.add(("model", model, KIT, "malformed_tool_args", source))
    elif error.kind == "logical":
        hits.add(("tool", tool, framework, "tool_failure", source))
    elif "Timeout" in error.type:
        hits.add(("tool", tool, framework, "timeout", source))
    elif error.retryable:
        hits.add(("tool", tool, framework, "retryable", source))
    else:
        hits.add(("tool", tool, framework, "non_retryable", source))


def _observe_scripted(
    fault_class: str, tools: Sequence[str], host: str, rows: set[_Row], hits: set[_Hit]
) -> None:
    for tool in tools:
        frameworks = {row[2] for row in rows if row[:2] == ("tool", tool)}
        if len(frameworks) == 1:
            hits.add(("tool", tool, frameworks.pop(), fault_class, USER))
    covered = _SERVED.get(fault_class)
    if covered is not None and ("host", host, HTTP) in rows:
        hits.add(("host", host, HTTP, covered, USER))


def _observe_model(
    event: Event,
    rows: set[_Row],
    hits: set[_Hit],
    model_of_run: dict[str, str],
    llm_fault_of_run: dict[str, str],
) -> None:
    if event.type == "llm.request":
        name = event.detail or event.agent or "model"
        model_of_run[event.run_id] = name
        llm_fault_of_run.pop(event.run_id, None)  # a fault covers the call it hit only
        rows.add(("model", name, KIT))
        return
    model = model_of_run.get(event.run_id)
    if model is None:
        return
    if event.type == "llm.fault":
        label = str(event.status or "")
        llm_fault_of_run[event.run_id] = label
        covered = _LABELS.get(label)
        if covered is not None:
            hits.add(("model", model, KIT, covered, INJECTED))
    elif event.type == "llm.error" and event.error is not None:
        covered = _MODEL_ERRORS.get(event.error.type)
        if covered is not None and llm_fault_of_run.get(event.run_id) is None:
            hits.add(("model", model, KIT, covered, USER))
    elif (
        event.type == "llm.response"
        and llm_fault_of_run.get(event.run_id) is None
        and (event.status in ("content_filter", "blocked") or event.detail == "")
    ):
        hits.add(("model", model, KIT, "empty_or_blocked", USER))


def _observe_host(event: Event, rows: set[_Row], hits: set[_Hit]) -> None:
    url = event.field("url")
    if not isinstance(url, str) or refused(event):
        return  # (refused by the network guard: never sent, the host not exercised)
    host = url_host(url) or url
    rows.add(("host", host, HTTP))
    if event.type != "http.request":
        return
    label = event.field("fault")
    source = INJECTED if label is not None else USER
    status = event.status if isinstance(event.status, int) else None
    covered: str | None = None
    if status == 429:
        covered = "rate_limit" if event.field("retry_after") is not None else None
    elif status is not None and status >= 500:
        covered = "server_error"
    elif label is not None:
        covered = _LABELS.get(str(label))
    elif event.error is not None:
        name = event.error.type
        if "Timeout" in name:
            covered = "timeout"
        elif name in ("ConnectError", "ReadError", "RemoteProtocolError", "ConnectionError"):
            covered = "connection"
    if covered is not None:
        hits.add(("host", host, HTTP, covered, source))
