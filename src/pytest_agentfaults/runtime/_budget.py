"""Token budgets: when the tokens a run used cross a `Budget`'s token caps.

Counted from the usage each model client reports (a `ScriptedModel` step counts words,
or declares its usage). Checked before each model call (a cap already reached leaves
nothing for the call) and after each answer (an answer that crossed a cap ends the run:
its tokens are spent, and the next call would only spend more).

`Meter` counts the calls a model combinator makes inside one model call of the run
(`first_of`, `speculative`), and the tokens of the answers it does not return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pytest_agentfaults.errors import BudgetExceededError
from pytest_agentfaults.runtime._result import Budget, Usage

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models.base import ModelResponse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["TOKEN_LIMITS", "Meter", "check_tokens"]

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


class Meter:
    """A run's usage as a model combinator sees it: each extra call counted, within the budget.

    The run counts the combinator's call itself and the tokens of the answer it returns;
    the combinator reports each further call it makes (`call`, refused past a cap) and the
    answers it draws but does not return (`unused`: a loser's, an invalid sample's).
    """

    __slots__ = ("budget", "usage")

    def __init__(self, budget: Budget, usage: Usage) -> None:
        self.budget = budget
        self.usage = usage

    def call(self) -> None:
        """Count one more model call; `BudgetExceededError` when no call or token is left."""
        cap = self.budget.max_llm_calls
        if cap is not None and self.usage.llm_calls >= cap:
            raise BudgetExceededError(
                f"budget max_llm_calls={cap} reached", limit="max_llm_calls", value=cap
            )
        check_tokens(self.budget, self.usage, before_call=True)
        self.usage.llm_calls += 1

    def unused(self, response: ModelResponse) -> None:
        """Count the tokens of an answer that was drawn but is not the turn's answer."""
        self.usage.input_tokens += response.usage.input_tokens
        self.usage.output_tokens += response.usage.output_tokens
