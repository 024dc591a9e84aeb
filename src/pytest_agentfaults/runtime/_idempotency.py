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
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.errors import is_ambiguous
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.hooks import declared_non_idempotent

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.policy import Retry

__all__ = ["must_not_rerun", "non_idempotent", "with_recheck"]


def non_idempotent(tool: BaseTool[Any, Any]) -> bool:
    """Whether ``tool`` must not run twice, by its own mark or the test's declaration."""
    return not tool.idempotent or declared_non_idempotent(tool.name)


def must_not_rerun(tool: BaseTool[Any, Any], error: BaseException, action: Retry) -> bool:
    """Whether ``action`` must not re-run ``tool`` after ``error``."""
    # `non_idempotent`, inlined: asked after every failed attempt
    return (
        not action.allow_non_idempotent
        and (not tool.idempotent or declared_non_idempotent(tool.name))
        and is_ambiguous(error)
    )


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
