"""Token budgets: when the tokens a run used cross a `Budget`'s token caps.

Counted from the usage each model client reports (a `ScriptedModel` step counts words,
or declares its usage). Checked before each model call (a cap already reached leaves
nothing for the call) and after each answer (an answer that crossed a cap ends the run:
its tokens are spent, and the next call would only spend more).
"""

from __future__ import annotations

from typing import Final

from pytest_agentfaults.errors import BudgetExceededError
from pytest_agentfaults.runtime._result import Budget, Usage

__all__ = ["TOKEN_LIMITS", "check_tokens"]

TOKEN_LIMITS: Final = ("max_input_tokens", "max_output_tokens", "max_total_tokens")


def check_tokens(budget: Budget, usage: Usage, *, before_call: bool) -> None:
    """Raise `BudgetExceededError` when ``usage`` reached (before a call) or crossed a cap."""
    used = {
        "max_input_tokens": usage.input_tokens,
        "max_output_tokens": usage.output_tokens,
        "max_total_tokens": usage.input_tokens + usage.output_tokens,
    }
    for limit in TOKEN_LIMITS:
        cap: int | None = getattr(budget, limit)
        if cap is None:
            continue
        spent = used[limit]
        if spent > cap or (before_call and spent >= cap):
            raise BudgetExceededError(
                f"budget {limit}={cap} reached: {spent} tokens used", limit=limit, value=cap
            )
