"""The recovery runtime: agents, tools, recovery policies, clocks, events.

Depends on pydantic, httpx and the standard library only: importing it never loads pytest,
respx, hypothesis or faker.
"""

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.runtime._result import Budget, CancelToken, RunResult, Usage
from pytest_agentfaults.runtime.agent import Agent, Loop
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.clock import Clock, RealClock, VirtualClock
from pytest_agentfaults.runtime.combinators import FirstOf, Speculative, first_of, speculative
from pytest_agentfaults.runtime.decisions import LlmErrorDecision
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.models.base import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from pytest_agentfaults.runtime.policy import (
    OnError,
    feed_back,
    fix,
    raise_error,
    respond_with,
    retry,
)
from pytest_agentfaults.runtime.tools import Tool, tool

__all__ = [
    "Agent",
    "Budget",
    "CancelToken",
    "Clock",
    "ErrorRecord",
    "Event",
    "FirstOf",
    "LlmErrorDecision",
    "Loop",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "OnError",
    "RealClock",
    "ResilienceConfig",
    "RunResult",
    "Speculative",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolFailure",
    "ToolSpec",
    "Trace",
    "Usage",
    "VirtualClock",
    "feed_back",
    "first_of",
    "fix",
    "raise_error",
    "respond_with",
    "retry",
    "speculative",
    "tool",
]
