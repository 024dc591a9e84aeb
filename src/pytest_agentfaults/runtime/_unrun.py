"""The tool calls a stopped run did not run, answered so its conversation can go on.

A budget cap or a cancel can stop a run between the model's tool calls and their results.
OpenAI and Anthropic refuse a conversation in which an assistant's tool call has no result
before the next message, so a `RunResult.messages` left like that could not be continued:
each call not run gets a tool result saying so (``error_type`` ``"aborted"``, no attempt).
"""

from __future__ import annotations

import json

from pytest_agentfaults.runtime.models.base import Message, tool_message

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["answer_unrun_calls"]


def answer_unrun_calls(messages: list[Message], why: str) -> None:
    """Append a "not run" result for each of the last assistant message's unanswered calls."""
    answered: set[str | None] = set()
    for message in reversed(messages):
        if message.role == "tool":
            answered.add(message.tool_call_id)
            continue
        if message.role != "assistant":
            return  # a user message last (a correction, a prompt): no call is pending
        for call in message.tool_calls:
            if call.id not in answered:
                content = json.dumps(
                    {
                        "ok": False,
                        "tool": call.name,
                        "error": f"not run: {why}",
                        "error_type": "aborted",
                        "retryable": False,
                        "attempts": 0,
                        "recommendations": [
                            f"The call to '{call.name}' did not run; call it again if it is "
                            "still needed."
                        ],
                    }
                )
                messages.append(tool_message(content, call.id, call.name))
        return
