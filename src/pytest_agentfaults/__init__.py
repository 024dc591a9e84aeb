"""pytest-agentfaults: make LLM agents recover from failing tools and models, and prove it.

```python
import pytest_agentfaults as af

@af.tool
def fetch(url: str) -> str:
    \"\"\"Fetch a URL.\"\"\"

agent = af.Agent("bot", model=af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")]),
                 tools=[fetch], clock=af.VirtualClock())
result = agent.run("go")
```

Lazy: importing this package (and so the pytest plugin) loads only this file; each name
imports its module on first use (PEP 562 ``__getattr__``). This package is the one import
path of every public name; a function's or class's ``__module__`` reads
``pytest_agentfaults`` (see `_publish` for the classes that keep theirs). A few names
have a clearer twin (``RunUsage`` for ``Usage``, ``RequestUsage`` for ``TokenUsage``,
``TracedError`` for ``ErrorRecord``, ``Classification`` for ``ErrorInfo``, ``RunLoop`` for
``Loop``, ``ScriptStep`` for ``Step``): the same object under two names.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from pytest_agentfaults._failure import ToolFailure
    from pytest_agentfaults._plugin_given import AgentFaultsWarning, HypothesisMarkerWarning
    from pytest_agentfaults.errors import (
        AgentFaultsError,
        BudgetExceededError,
        ErrorInfo,
        EscalationError,
        InvalidArgsError,
        MalformedResponseError,
        ModelAuthError,
        ModelError,
        ModelHTTPError,
        ModelServerError,
        ModelStreamError,
        ModelTimeoutError,
        ModelTransportError,
        NetworkBlockedError,
        RateLimitError,
        Severity,
        ToolError,
        ToolExecutionError,
        ToolTimeoutError,
        UnknownToolError,
        UsageError,
        VirtualTimeSpinError,
        classify,
    )
    from pytest_agentfaults.runtime._result import Budget, CancelToken, RunResult, Usage
    from pytest_agentfaults.runtime.agent import Agent, Loop
    from pytest_agentfaults.runtime.backoff import (
        ResilienceConfig,
    )
    from pytest_agentfaults.runtime.clock import (
        Clock,
        RealClock,
        VirtualClock,
    )
    from pytest_agentfaults.runtime.combinators import (
        FirstOf,
        Speculative,
        first_of,
        speculative,
    )
    from pytest_agentfaults.runtime.decisions import (
        LlmErrorDecision,
    )
    from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
    from pytest_agentfaults.runtime.models._retry import (
        TransportRetry,
    )
    from pytest_agentfaults.runtime.models.anthropic import (
        AnthropicModel,
    )
    from pytest_agentfaults.runtime.models.base import (
        Message,
        Model,
        ModelRequest,
        ModelResponse,
        TokenUsage,
        ToolCall,
        ToolSpec,
    )
    from pytest_agentfaults.runtime.models.ollama import (
        OllamaModel,
    )
    from pytest_agentfaults.runtime.models.openai import (
        OpenAIModel,
    )
    from pytest_agentfaults.runtime.models.resolve import (
        resolve_model,
    )
    from pytest_agentfaults.runtime.policy import (
        OnError,
        feed_back,
        fix,
        raise_error,
        respond_with,
        retry,
    )
    from pytest_agentfaults.runtime.tools import (
        Tool,
        tool,
    )
    from pytest_agentfaults.runtime.verdict import (
        Finding,
        NotResilientError,
        Verdict,
    )
    from pytest_agentfaults.testing._fail_steps import fail
    from pytest_agentfaults.testing._malformed_steps import malformed
    from pytest_agentfaults.testing._serve import ReceivedRequest
    from pytest_agentfaults.testing.faults import (
        FaultPlan,
        FiredFault,
    )
    from pytest_agentfaults.testing.http import (
        HttpFaultRouter,
        UnmatchedRequestError,
    )
    from pytest_agentfaults.testing.schedules import (
        ScheduleViolation,
        check_schedule,
    )
    from pytest_agentfaults.testing.scope import (
        FaultScope,
        fault_scope,
    )
    from pytest_agentfaults.testing.scripted import ScriptedModel, ScriptExhaustedError
    from pytest_agentfaults.testing.server import LLMServer
    from pytest_agentfaults.testing.steps import Step, call_tool, call_tools, say

    # the clearer twins: the same objects (see the docstring)
    Classification = ErrorInfo
    RequestUsage = TokenUsage
    RunLoop = Loop
    RunUsage = Usage
    ScriptStep = Step
    TracedError = ErrorRecord

# public name -> (defining module, the name there); sorted. Imported on first access.
_LAZY: dict[str, tuple[str, str]] = {
    "Agent": ("pytest_agentfaults.runtime.agent", "Agent"),
    "AgentFaultsError": ("pytest_agentfaults.errors", "AgentFaultsError"),
    "AgentFaultsWarning": ("pytest_agentfaults._plugin_given", "AgentFaultsWarning"),
    "AnthropicModel": ("pytest_agentfaults.runtime.models.anthropic", "AnthropicModel"),
    "Budget": ("pytest_agentfaults.runtime._result", "Budget"),
    "BudgetExceededError": ("pytest_agentfaults.errors", "BudgetExceededError"),
    "CancelToken": ("pytest_agentfaults.runtime._result", "CancelToken"),
    "Classification": ("pytest_agentfaults.errors", "ErrorInfo"),
    "Clock": ("pytest_agentfaults.runtime.clock", "Clock"),
    "ErrorInfo": ("pytest_agentfaults.errors", "ErrorInfo"),
    "ErrorRecord": ("pytest_agentfaults.runtime.events", "ErrorRecord"),
    "EscalationError": ("pytest_agentfaults.errors", "EscalationError"),
    "Event": ("pytest_agentfaults.runtime.events", "Event"),
    "FaultPlan": ("pytest_agentfaults.testing.faults", "FaultPlan"),
    "FaultScope": ("pytest_agentfaults.testing.scope", "FaultScope"),
    "Finding": ("pytest_agentfaults.runtime.verdict", "Finding"),
    "FiredFault": ("pytest_agentfaults.testing.faults", "FiredFault"),
    "FirstOf": ("pytest_agentfaults.runtime.combinators", "FirstOf"),
    "HttpFaultRouter": ("pytest_agentfaults.testing.http", "HttpFaultRouter"),
    "HypothesisMarkerWarning": ("pytest_agentfaults._plugin_given", "HypothesisMarkerWarning"),
    "InvalidArgsError": ("pytest_agentfaults.errors", "InvalidArgsError"),
    "LLMServer": ("pytest_agentfaults.testing.server", "LLMServer"),
    "LlmErrorDecision": ("pytest_agentfaults.runtime.decisions", "LlmErrorDecision"),
    "Loop": ("pytest_agentfaults.runtime.agent", "Loop"),
    "MalformedResponseError": ("pytest_agentfaults.errors", "MalformedResponseError"),
    "Message": ("pytest_agentfaults.runtime.models.base", "Message"),
    "Model": ("pytest_agentfaults.runtime.models.base", "Model"),
    "ModelAuthError": ("pytest_agentfaults.errors", "ModelAuthError"),
    "ModelError": ("pytest_agentfaults.errors", "ModelError"),
    "ModelHTTPError": ("pytest_agentfaults.errors", "ModelHTTPError"),
    "ModelRequest": ("pytest_agentfaults.runtime.models.base", "ModelRequest"),
    "ModelResponse": ("pytest_agentfaults.runtime.models.base", "ModelResponse"),
    "ModelServerError": ("pytest_agentfaults.errors", "ModelServerError"),
    "ModelStreamError": ("pytest_agentfaults.errors", "ModelStreamError"),
    "ModelTimeoutError": ("pytest_agentfaults.errors", "ModelTimeoutError"),
    "ModelTransportError": ("pytest_agentfaults.errors", "ModelTransportError"),
    "NetworkBlockedError": ("pytest_agentfaults.errors", "NetworkBlockedError"),
    "NotResilientError": ("pytest_agentfaults.runtime.verdict", "NotResilientError"),
    "OllamaModel": ("pytest_agentfaults.runtime.models.ollama", "OllamaModel"),
    "OnError": ("pytest_agentfaults.runtime.policy", "OnError"),
    "OpenAIModel": ("pytest_agentfaults.runtime.models.openai", "OpenAIModel"),
    "RateLimitError": ("pytest_agentfaults.errors", "RateLimitError"),
    "RealClock": ("pytest_agentfaults.runtime.clock", "RealClock"),
    "ReceivedRequest": ("pytest_agentfaults.testing._serve", "ReceivedRequest"),
    "RequestUsage": ("pytest_agentfaults.runtime.models.base", "TokenUsage"),
    "ResilienceConfig": ("pytest_agentfaults.runtime.backoff", "ResilienceConfig"),
    "RunLoop": ("pytest_agentfaults.runtime.agent", "Loop"),
    "RunResult": ("pytest_agentfaults.runtime._result", "RunResult"),
    "RunUsage": ("pytest_agentfaults.runtime._result", "Usage"),
    "ScheduleViolation": ("pytest_agentfaults.testing.schedules", "ScheduleViolation"),
    "ScriptExhaustedError": ("pytest_agentfaults.testing.scripted", "ScriptExhaustedError"),
    "ScriptStep": ("pytest_agentfaults.testing.steps", "ScriptStep"),
    "ScriptedModel": ("pytest_agentfaults.testing.scripted", "ScriptedModel"),
    "Severity": ("pytest_agentfaults.errors", "Severity"),
    "Speculative": ("pytest_agentfaults.runtime.combinators", "Speculative"),
    "Step": ("pytest_agentfaults.testing.steps", "ScriptStep"),
    "TokenUsage": ("pytest_agentfaults.runtime.models.base", "TokenUsage"),
    "Tool": ("pytest_agentfaults.runtime.tools", "Tool"),
    "ToolCall": ("pytest_agentfaults.runtime.models.base", "ToolCall"),
    "ToolError": ("pytest_agentfaults.errors", "ToolError"),
    "ToolExecutionError": ("pytest_agentfaults.errors", "ToolExecutionError"),
    "ToolFailure": ("pytest_agentfaults._failure", "ToolFailure"),
    "ToolSpec": ("pytest_agentfaults.runtime.models.base", "ToolSpec"),
    "ToolTimeoutError": ("pytest_agentfaults.errors", "ToolTimeoutError"),
    "Trace": ("pytest_agentfaults.runtime.events", "Trace"),
    "TracedError": ("pytest_agentfaults.runtime.events", "ErrorRecord"),
    "TransportRetry": ("pytest_agentfaults.runtime.models._retry", "TransportRetry"),
    "UnknownToolError": ("pytest_agentfaults.errors", "UnknownToolError"),
    "UnmatchedRequestError": ("pytest_agentfaults.testing.http", "UnmatchedRequestError"),
    "Usage": ("pytest_agentfaults.runtime._result", "Usage"),
    "UsageError": ("pytest_agentfaults.errors", "UsageError"),
    "Verdict": ("pytest_agentfaults.runtime.verdict", "Verdict"),
    "VirtualClock": ("pytest_agentfaults.runtime.clock", "VirtualClock"),
    "VirtualTimeSpinError": ("pytest_agentfaults.errors", "VirtualTimeSpinError"),
    "call_tool": ("pytest_agentfaults.testing.steps", "call_tool"),
    "call_tools": ("pytest_agentfaults.testing.steps", "call_tools"),
    "check_schedule": ("pytest_agentfaults.testing.schedules", "check_schedule"),
    "classify": ("pytest_agentfaults.errors", "classify"),
    "fail": ("pytest_agentfaults.testing._fail_steps", "fail"),
    "fault_scope": ("pytest_agentfaults.testing.scope", "fault_scope"),
    "feed_back": ("pytest_agentfaults.runtime.policy", "feed_back"),
    "first_of": ("pytest_agentfaults.runtime.combinators", "first_of"),
    "fix": ("pytest_agentfaults.runtime.policy", "fix"),
    "malformed": ("pytest_agentfaults.testing._malformed_steps", "malformed"),
    "raise_error": ("pytest_agentfaults.runtime.policy", "raise_error"),
    "resolve_model": ("pytest_agentfaults.runtime.models.resolve", "resolve_model"),
    "respond_with": ("pytest_agentfaults.runtime.policy", "respond_with"),
    "retry": ("pytest_agentfaults.runtime.policy", "retry"),
    "say": ("pytest_agentfaults.testing.steps", "say"),
    "speculative": ("pytest_agentfaults.runtime.combinators", "speculative"),
    "tool": ("pytest_agentfaults.runtime.tools", "tool"),
}

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Agent",
    "AgentFaultsError",
    "AgentFaultsWarning",
    "AnthropicModel",
    "Budget",
    "BudgetExceededError",
    "CancelToken",
    "Classification",
    "Clock",
    "ErrorInfo",
    "ErrorRecord",
    "EscalationError",
    "Event",
    "FaultPlan",
    "FaultScope",
    "Finding",
    "FiredFault",
    "FirstOf",
    "HttpFaultRouter",
    "HypothesisMarkerWarning",
    "InvalidArgsError",
    "LLMServer",
    "LlmErrorDecision",
    "Loop",
    "MalformedResponseError",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelError",
    "ModelHTTPError",
    "ModelRequest",
    "ModelResponse",
    "ModelServerError",
    "ModelStreamError",
    "ModelTimeoutError",
    "ModelTransportError",
    "NetworkBlockedError",
    "NotResilientError",
    "OllamaModel",
    "OnError",
    "OpenAIModel",
    "RateLimitError",
    "RealClock",
    "ReceivedRequest",
    "RequestUsage",
    "ResilienceConfig",
    "RunLoop",
    "RunResult",
    "RunUsage",
    "ScheduleViolation",
    "ScriptExhaustedError",
    "ScriptStep",
    "ScriptedModel",
    "Severity",
    "Speculative",
    "Step",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolExecutionError",
    "ToolFailure",
    "ToolSpec",
    "ToolTimeoutError",
    "Trace",
    "TracedError",
    "TransportRetry",
    "UnknownToolError",
    "UnmatchedRequestError",
    "Usage",
    "UsageError",
    "Verdict",
    "VirtualClock",
    "VirtualTimeSpinError",
    "__version__",
    "call_tool",
    "call_tools",
    "check_schedule",
    "classify",
    "fail",
    "fault_scope",
    "feed_back",
    "first_of",
    "fix",
    "malformed",
    "raise_error",
    "resolve_model",
    "respond_with",
    "retry",
    "say",
    "speculative",
    "tool",
]


def __getattr__(name: str) -> Any:
    # Not cached in globals(): the import system's own cache answers, so a module that was
    # unloaded and imported again (pytester's in-process runs do that) is never half stale.
    if name in _LAZY:
        module, attribute = _LAZY[name]
        loaded = sys.modules.get(module)
        # A test names af.X at each use: the module this name was last found in, still
        # the one loaded, answers at once (it was fully imported then; and the attribute
        # is read again, so a monkeypatched one shows).
        if loaded is not None and _found_in.get(name) is loaded:
            return getattr(loaded, attribute)
        # Another thread may still be importing it: the import machinery waits for that.
        if loaded is None or getattr(loaded.__spec__, "_initializing", False):
            loaded = importlib.import_module(module)
        value = getattr(loaded, attribute)
        _publish(value, attribute)
        _found_in[name] = loaded
        return value
    if name == "__version__":
        from importlib.metadata import version  # noqa: PLC0415 - lazy: reads the metadata

        return version("pytest-agentfaults")
    raise AttributeError(f"module 'pytest_agentfaults' has no attribute {name!r}")


#: each lazy name -> the module it was found in (`__getattr__`'s fast path); a module
#: imported again is another object, so the slow path runs (and publishes) again for it
_found_in: dict[str, ModuleType] = {}


def _publish(value: Any, attribute: str) -> None:
    """Show the public path, as httpx does: ``pytest_agentfaults.tool``, not the private one.

    Only a function or class under its own name (an alias shares its target's object);
    pickle and reprs then go through this package, whose ``__getattr__`` finds the name.
    A class whose own annotations are strings keeps its module: ``typing.get_type_hints``
    (and pydantic, hypothesis' ``builds``) resolve them in ``sys.modules[cls.__module__]``.
    """
    if getattr(value, "__name__", None) != attribute or value.__module__ == __name__:
        return
    if isinstance(value, type):
        own = vars(value).get("__annotations__", {})
        if any(isinstance(hint, str) for hint in own.values()):
            return
    elif not callable(value) or not hasattr(value, "__globals__"):
        return
    value.__module__ = __name__


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
