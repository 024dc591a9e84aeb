"""Tools that must not run twice: when a retry is refused, and what the model is told.

A tool is non-idempotent when it says so (``@af.tool(idempotent=False)``) or when the test
declares it (the marker's ``idempotent=False``). After an ambiguous failure of such a tool
(`pytest_agentfaults.errors.is_ambiguous`: its effect may have happened) a `Retry` does not
run it again unless it was built with ``allow_non_idempotent=True``; the failure goes back
to the model with the advice to check the state first. Other failures (the effect surely
did not happen) are retried as for any tool.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.hooks import declared_non_idempotent

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["non_idempotent", "with_recheck"]


def non_idempotent(tool: BaseTool[Any, Any]) -> bool:
    """Whether ``tool`` must not run twice, by its own mark or the test's declaration."""
    return not tool.idempotent or declared_non_idempotent(tool.name)


def recheck_advice(tool: str) -> str:
    """What the model is told when a non-idempotent call failed ambiguously."""
    return (
        f"The call to '{tool}' may have taken effect before it failed, and '{tool}' must "
        "not run twice: check the state first (look the result up), and call it again only "
        "if it did not happen."
    )


def with_recheck(payload: str, tool: str) -> str:
    """The model's error payload for ``tool``, led by the advice to check before calling."""
    data = json.loads(payload)
    data["may_have_taken_effect"] = True
    data["recommendations"] = [recheck_advice(tool)]
    return json.dumps(data)
