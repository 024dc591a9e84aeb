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

The recovery runtime and the error taxonomy are imported eagerly; the test kit, the HTTP
model clients and the optional parts load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    RateLimitError,
    Severity,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
    UnknownToolError,
    UsageError,
    classify,
)
from pytest_agentfaults.runtime import (
    Agent,
    Budget,
    CancelToken,
    Clock,
    ErrorRecord,
    Event,
    FirstOf,
    LlmErrorDecision,
    Loop,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    OnError,
    RealClock,
    ResilienceConfig,
    RunResult,
    Speculative,
    TokenUsage,
    Tool,
    ToolCall,
    ToolFailure,
    ToolSpec,
    Trace,
    Usage,
    VirtualClock,
    feed_back,
    first_of,
    fix,
    raise_error,
    respond_with,
    retry,
    speculative,
    tool,
)

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models._retry import TransportRetry
    from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
    from pytest_agentfaults.runtime.models.ollama import OllamaModel
    from pytest_agentfaults.runtime.models.openai import OpenAIModel
    from pytest_agentfaults.runtime.models.resolve import resolve_model
    from pytest_agentfaults.runtime.verdict import Finding, NotResilientError, Verdict
    from pytest_agentfaults.testing import (
        FaultPlan,
        FaultScope,
        FiredFault,
        ScriptedModel,
        ScriptExhaustedError,
        Step,
        call_tool,
        call_tools,
        fail,
        fault_scope,
        malformed,
        say,
    )
    from pytest_agentfaults.testing.http import HttpFaultRouter, UnmatchedRequestError
    from pytest_agentfaults.testing.schedules import ScheduleViolation, check_schedule
    from pytest_agentfaults.testing.server import LLMServer, ReceivedRequest

# name -> module that defines it; imported on first attribute access.
_LAZY: dict[str, str] = {
    "AnthropicModel": "pytest_agentfaults.runtime.models.anthropic",
    "FaultPlan": "pytest_agentfaults.testing",
    "FaultScope": "pytest_agentfaults.testing",
    "Finding": "pytest_agentfaults.runtime.verdict",
    "FiredFault": "pytest_agentfaults.testing",
    "HttpFaultRouter": "pytest_agentfaults.testing.http",
    "LLMServer": "pytest_agentfaults.testing.server",
    "NotResilientError": "pytest_agentfaults.runtime.verdict",
    "ReceivedRequest": "pytest_agentfaults.testing.server",
    "ScheduleViolation": "pytest_agentfaults.testing.schedules",
    "UnmatchedRequestError": "pytest_agentfaults.testing.http",
    "Verdict": "pytest_agentfaults.runtime.verdict",
    "OllamaModel": "pytest_agentfaults.runtime.models.ollama",
    "OpenAIModel": "pytest_agentfaults.runtime.models.openai",
    "TransportRetry": "pytest_agentfaults.runtime.models._retry",
    "resolve_model": "pytest_agentfaults.runtime.models.resolve",
    "ScriptExhaustedError": "pytest_agentfaults.testing",
    "ScriptedModel": "pytest_agentfaults.testing",
    "Step": "pytest_agentfaults.testing",
    "call_tool": "pytest_agentfaults.testing",
    "check_schedule": "pytest_agentfaults.testing.schedules",
    "call_tools": "pytest_agentfaults.testing",
    "fail": "pytest_agentfaults.testing",
    "fault_scope": "pytest_agentfaults.testing",
    "malformed": "pytest_agentfaults.testing",
    "say": "pytest_agentfaults.testing",
}

__all__ = [
    "Agent",
    "AgentFaultsError",
    "AnthropicModel",
    "Budget",
    "BudgetExceededError",
    "CancelToken",
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
    "NotResilientError",
    "OllamaModel",
    "OnError",
    "OpenAIModel",
    "RateLimitError",
    "RealClock",
    "ReceivedRequest",
    "ResilienceConfig",
    "RunResult",
    "ScheduleViolation",
    "ScriptExhaustedError",
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
    "TransportRetry",
    "UnknownToolError",
    "UnmatchedRequestError",
    "Usage",
    "UsageError",
    "Verdict",
    "VirtualClock",
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
    if name == "__version__":
        from importlib.metadata import version  # noqa: PLC0415 - lazy by design

        value: Any = version("pytest-agentfaults")
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'pytest_agentfaults' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
