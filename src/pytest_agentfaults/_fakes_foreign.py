"""What `fake_args` fills for a tool that is not an ``af.Tool``: its schema and its check.

Every agent framework describes a tool's arguments with a JSON schema, and most can check
a call against it without running the tool. Read duck-typed, so no framework is imported:

- a plain function: made an ``af.Tool`` (its signature is the schema, as ``@af.tool``);
- the anthropic SDK's ``@beta_tool``: its function, the same way;
- a pydantic-ai ``Tool``: ``tool_def.parameters_json_schema``, checked by pydantic-ai's
  own validator (``function_schema.validator``), ``RunContext`` left out as pydantic-ai
  leaves it;
- a LangChain ``BaseTool``: ``tool_call_schema``, checked by that pydantic model;
- an OpenAI Agents SDK ``FunctionTool``: ``params_json_schema``;
- an MCP ``Tool`` (``list_tools()``): ``input_schema`` (``inputSchema`` before mcp 2);
- an openai SDK function tool (a Responses or Chat Completions tool dict, or the tool
  runner's ``RegisteredFunction``): its ``parameters``;
- a JSON schema itself (a mapping with ``"properties"`` or ``"type": "object"``).

The last four have no check of their own here: the values are drawn from the schema and
a call every reading of it refuses (`refused_arguments`) is drawn again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.tools import Tool
from pytest_agentfaults.testing._frameworks._refusals import refused_arguments

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Foreign", "read_tool"]

#: what to fill: the tool's name (for messages), its JSON schema, and a check of a call's
#: JSON arguments that raises when the tool would refuse them
Foreign = tuple[str, Mapping[str, Any], Callable[[str], object]]

_TAKES = (
    "fake_args() takes a tool: an af.Tool, a function, a pydantic-ai Tool, a LangChain "
    "tool, an OpenAI Agents SDK FunctionTool, an MCP Tool, an anthropic @beta_tool, an "
    "openai SDK function tool, or a JSON schema of the arguments"
)


def read_tool(tool: object) -> Tool[Any, Any] | Foreign:
    """``tool`` as an ``af.Tool`` to fill, or its name, schema and check (see the module)."""
    if isinstance(tool, Tool):
        return tool
    function = _openai_function(tool)
    if function is not None:
        return function
    if isinstance(tool, Mapping):
        if "properties" not in tool and tool.get("type") != "object":
            raise UsageError(f"{_TAKES}; this mapping is no object schema: {dict(tool)!r}")
        return _by_schema("the schema", tool)
    name = str(getattr(tool, "name", "") or getattr(tool, "__name__", "") or type(tool).__name__)
    found = (
        _pydantic_ai(tool, name)
        or _langchain(tool, name)
        or _beta_tool(tool, name)
        or _schema_only(tool, name)
        or _function(tool, tool, None)
    )
    if found is None:
        raise UsageError(f"{_TAKES}; got {tool!r}")
    return found


def _pydantic_ai(tool: Any, name: str) -> Foreign | None:
    schema = getattr(getattr(tool, "tool_def", None), "parameters_json_schema", None)
    validator = getattr(getattr(tool, "function_schema", None), "validator", None)
    check = getattr(validator, "validate_json", None)
    if not isinstance(schema, Mapping) or not callable(check):
        return None
    return name, schema, check


def _langchain(tool: Any, name: str) -> Foreign | None:
    model = getattr(tool, "tool_call_schema", None) if hasattr(tool, "args_schema") else None
    if isinstance(model, Mapping):
        return _by_schema(name, model)
    read = getattr(model, "model_json_schema", None)
    if model is None or not callable(read):
        return None
    return name, read(), model.model_validate_json


def _beta_tool(tool: Any, name: str) -> Tool[Any, Any] | None:
    """An anthropic ``@beta_tool``: the function it holds, named as the tool is."""
    function = getattr(tool, "func", None)
    if function is None or not hasattr(tool, "input_schema"):
        return None
    return _function(tool, function, name)


def _openai_function(tool: Any) -> Foreign | None:
    """An openai SDK function tool: a Responses or Chat Completions tool, or a registered one.

    ``{"type": "function", "name": ..., "parameters": ...}`` (Responses),
    ``{"type": "function", "function": {"name": ..., "parameters": ...}}`` (Chat
    Completions, ``openai.pydantic_function_tool``), or the tool runner's
    ``RegisteredFunction``, which holds the first as ``tool``.
    """
    spec = getattr(tool, "tool", tool) if not isinstance(tool, Mapping) else tool
    if not isinstance(spec, Mapping) or spec.get("type") != "function":
        return None
    inner = spec.get("function", spec)
    parameters = inner.get("parameters") if isinstance(inner, Mapping) else None
    if not isinstance(parameters, Mapping):
        return None
    return _by_schema(str(inner.get("name") or "the function"), parameters)


def _schema_only(tool: Any, name: str) -> Foreign | None:
    # the Agents SDK's; MCP's (2.x, and 1.x's camel case)
    for attribute in ("params_json_schema", "input_schema", "inputSchema"):
        schema = getattr(tool, attribute, None)
        if isinstance(schema, Mapping):
            return _by_schema(name, schema)
    return None


def _function(tool: Any, function: Any, name: str | None) -> Tool[Any, Any] | None:
    """A function as an ``af.Tool`` (None if ``function`` is none)."""
    if not callable(function) or isinstance(function, type):
        return None
    if name is None and not str(getattr(function, "__name__", "")).isidentifier():
        name = "function"  # a lambda: its name is for messages only here
    return Tool(function, name=name)


def _by_schema(name: str, schema: Mapping[str, Any]) -> Foreign:
    def check(arguments: str) -> None:
        if refused_arguments(schema, json.loads(arguments)):
            raise ValueError("the schema refuses these arguments")

    return name, schema, check
