"""Per-tool recovery: `OnError`, its actions, and which policy applies to a failure.

```python
@af.tool(on_error=af.OnError(invalid_args=af.fix(json_fixer),
                             execution=af.retry(max_attempts=3, strategy="fixed")))
def parse(json: str) -> dict: ...
```

Resolution priority, for each kind of failure: the tool's own ``on_error`` > the agent's
``on_tool_error[name]`` > the agent's ``tool_defaults`` > `ResilienceConfig`
(``tool_overrides[name]`` over the base fields). A timeout uses a level's ``timeout`` action,
else that level's ``execution`` action, before looking at the next level.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pytest_agentfaults.errors import UsageError, kind_and_retryable
from pytest_agentfaults.runtime.backoff import STRATEGIES, ResilienceConfig, backoff_delay

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Action",
    "FailureKind",
    "FeedBack",
    "Fix",
    "Fixer",
    "OnError",
    "RaiseError",
    "Resolutions",
    "RespondWith",
    "Retry",
    "RetryPlan",
    "feed_back",
    "fix",
    "raise_error",
    "respond_with",
    "retry",
]

FailureKind = Literal["invalid_args", "execution", "timeout"]


class Fixer(Protocol):
    """What `fix` needs of its agent: an `af.Agent`, or `af.Agent.from_function(...)`."""

    name: str

    @property
    def fixer_function(self) -> Callable[[str], Any] | None:
        """The function of a function fixer, called with the raw arguments; else None."""

    def fixer_steps(
        self, parent: Any, tool: Any, error: Exception, raw: str
    ) -> Generator[Any, Any, Any]:
        """The steps of one LLM fixer round for ``tool``, run inside ``parent``'s pipeline."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Run the tool again. ``max_attempts`` counts the original call.

    Fields left ``None`` come from the `ResilienceConfig` in force. ``retry_on`` narrows what
    is retried (exception types or a predicate); by default `classify` decides.

    A tool marked ``idempotent=False`` is not retried after an ambiguous failure (a timeout,
    a connection broken after sending: `pytest_agentfaults.errors.is_ambiguous`), whatever
    ``retry_on`` says; ``allow_non_idempotent=True`` opts in to re-running it anyway.
    """

    max_attempts: int = 3
    strategy: str | None = None
    base_delay: float | None = None
    max_delay: float | None = None
    jitter_factor: float | None = None
    retry_on: tuple[type[BaseException], ...] | Callable[[BaseException], bool] | None = None
    allow_non_idempotent: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise UsageError(f"retry(max_attempts={self.max_attempts!r}): give an int >= 1")
        if self.max_attempts < 1:
            raise UsageError(
                f"retry(max_attempts={self.max_attempts}): max_attempts counts the original "
                "call, so it must be >= 1 (1 means no retry)"
            )
        if self.strategy is not None:
            normal = self.strategy.strip().lower() if isinstance(self.strategy, str) else None
            if normal not in STRATEGIES:
                raise UsageError(
                    f"retry(strategy={self.strategy!r}): unknown strategy; use one of "
                    f"{', '.join(STRATEGIES)}"
                )
            object.__setattr__(self, "strategy", normal)
        for name in ("base_delay", "max_delay", "jitter_factor"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise UsageError(f"retry({name}={value!r}): must be a finite number >= 0")
        object.__setattr__(self, "retry_on", _checked_retry_on(self.retry_on))
        if not isinstance(self.allow_non_idempotent, bool):
            raise UsageError(
                f"retry(allow_non_idempotent={self.allow_non_idempotent!r}): give True or False"
            )
        if self.jitter_factor is not None and self.jitter_factor > 1:
            raise UsageError(f"retry(jitter_factor={self.jitter_factor!r}): must be <= 1")
        if (
            self.base_delay is not None
            and self.max_delay is not None
            and self.max_delay < self.base_delay
        ):
            raise UsageError(
                f"retry(base_delay={self.base_delay:g}, max_delay={self.max_delay:g}): "
                "max_delay must be >= base_delay"
            )

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is one this action retries."""
        if self.retry_on is None:
            return kind_and_retryable(exc)[1]  # `classify` without its recommendations
        if isinstance(self.retry_on, tuple):
            return isinstance(exc, self.retry_on)
        return bool(self.retry_on(exc))

    def delay(self, retry_number: int, config: ResilienceConfig, uniform: float) -> float:
        """The wait before retry ``retry_number`` (1-based); unset fields from ``config``.

        The cap in force is the smallest cap that applies: ``config.max_delay``, and this
        action's own ``max_delay`` when it sets one. A ``base_delay`` above it waits the cap.
        """
        base = config.base_delay if self.base_delay is None else self.base_delay
        cap = config.max_delay
        if self.max_delay is not None and self.max_delay < cap:  # min(cap, self.max_delay)
            cap = self.max_delay
        return backoff_delay(
            self.strategy or config.strategy,
            retry_number,
            base_delay=base,
            max_delay=cap,
            jitter_factor=config.jitter_factor
            if self.jitter_factor is None
            else self.jitter_factor,
            uniform=uniform,
        )


def _checked_retry_on(value: Any) -> Any:
    """``retry_on`` as `Retry` keeps it: None, a callable, or a tuple of exception classes.

    Checked when the policy is built: a wrong one used to fail the run at its first
    failure, with a bare `TypeError`.
    """
    if value is None:
        return None
    if isinstance(value, type) and issubclass(value, BaseException):
        return (value,)
    if isinstance(value, tuple | list) and value:
        if all(isinstance(item, type) and issubclass(item, BaseException) for item in value):
            return tuple(value)
    elif callable(value) and not isinstance(value, type):
        return value
    raise UsageError(
        f"retry(retry_on={value!r}): give an exception class, a tuple of them, or a "
        "callable(exc) -> bool, e.g. retry_on=(ConnectionError, TimeoutError)"
    )


class RetryPlan:
    """A `Retry` under one config, its backoff's fields worked out once.

    `Retry.delay` reads the action and the config at every retry; a plan reads them when
    it is made (a tool call's first failure, or the agent's first run that needs it).
    """

    __slots__ = ("action", "base", "cap", "jitter", "max_attempts", "strategy")

    def __init__(self, action: Retry, config: ResilienceConfig) -> None:
        self.action = action
        self.max_attempts = action.max_attempts
        self.strategy = action.strategy or config.strategy
        self.base = config.base_delay if action.base_delay is None else action.base_delay
        cap = config.max_delay
        if action.max_delay is not None and action.max_delay < cap:
            cap = action.max_delay
        self.cap = cap
        self.jitter = config.jitter_factor if action.jitter_factor is None else action.jitter_factor

    def delay(self, retry_number: int, uniform: float) -> float:
        """`Retry.delay` of ``retry_number`` under the call's config, given U = ``uniform``."""
        if self.strategy != "exponential_jitter":
            return backoff_delay(
                self.strategy,
                retry_number,
                base_delay=self.base,
                max_delay=self.cap,
                jitter_factor=self.jitter,
                uniform=uniform,
            )
        # The default strategy, as `backoff_delay` computes it (same operations, same order).
        exponent = retry_number - 1
        delay = self.base * 2.0 ** (1023 if exponent > 1023 else exponent)  # noqa: FURB136
        delay *= 1.0 + uniform * self.jitter
        return delay if delay < self.cap else self.cap  # noqa: FURB136


@dataclass(frozen=True, slots=True)
class Fix:
    """Hand the failure to a fixer agent, which returns corrected arguments as JSON.

    Up to ``retries`` rounds; a fixer that returns the same arguments ends the rounds.
    """

    agent: Fixer
    retries: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 1:
            raise UsageError(f"fix(retries={self.retries!r}): give an int >= 1")
        if not hasattr(self.agent, "fixer_steps"):
            raise UsageError(
                f"fix() needs an af.Agent (or af.Agent.from_function(...)), got {self.agent!r}"
            )


@dataclass(frozen=True, slots=True)
class FeedBack:
    """Give the error payload to the model now, without retrying."""


@dataclass(frozen=True, slots=True)
class RaiseError:
    """Let the error propagate out of the run."""


@dataclass(frozen=True, slots=True)
class RespondWith:
    """Use ``value`` as the tool's result instead of the failure."""

    value: Any = None


Action = Retry | Fix | FeedBack | RaiseError | RespondWith
_ACTIONS = (Retry, Fix, FeedBack, RaiseError, RespondWith)


def retry(
    max_attempts: int = 3,
    *,
    strategy: str | None = None,
    base_delay: float | None = None,
    max_delay: float | None = None,
    jitter_factor: float | None = None,
    retry_on: tuple[type[BaseException], ...]
    | type[BaseException]
    | Callable[[BaseException], bool]
    | None = None,
    allow_non_idempotent: bool = False,
) -> Retry:
    """Rerun the tool, up to ``max_attempts`` runs in all (the original call included).

    ``allow_non_idempotent=True`` also re-runs a tool marked ``idempotent=False`` after an
    ambiguous failure (a timeout...), which the default refuses: say so only when running
    it twice is safe, for example when it sends an idempotency key.
    """
    if isinstance(retry_on, type):
        retry_on = (retry_on,)
    return Retry(
        max_attempts, strategy, base_delay, max_delay, jitter_factor, retry_on, allow_non_idempotent
    )


def fix(agent: Fixer, retries: int = 1) -> Fix:
    """Hand the failure to ``agent`` (a fixer) for up to ``retries`` rounds."""
    return Fix(agent, retries)


def feed_back() -> FeedBack:
    """Give the error to the model now."""
    return FeedBack()


def raise_error() -> RaiseError:
    """Propagate the error out of ``run()``."""
    return RaiseError()


def respond_with(value: Any) -> RespondWith:
    """Substitute ``value`` for the failed tool's result."""
    return RespondWith(value)


@dataclass(frozen=True, slots=True)
class OnError:
    """What to do when a tool fails, by kind of failure.

    ``invalid_args``: the arguments failed the schema (or were not JSON);
    ``execution``: the tool raised; ``timeout``: an attempt ran past its timeout
    (falls back to ``execution`` when unset).
    """

    invalid_args: Action | None = None
    execution: Action | None = None
    timeout: Action | None = None

    def __post_init__(self) -> None:
        for slot in ("invalid_args", "execution", "timeout"):
            value = getattr(self, slot)
            if value is not None and not isinstance(value, _ACTIONS):
                raise UsageError(
                    f"OnError({slot}={value!r}): use af.retry(), af.fix(), af.feed_back(), "
                    "af.raise_error() or af.respond_with()"
                )
        if isinstance(self.invalid_args, Retry):
            raise UsageError(
                "OnError(invalid_args=retry(...)): rerunning a call with the same invalid "
                "arguments cannot succeed; use af.fix(fixer) or af.feed_back()"
            )

    def action_for(self, kind: FailureKind) -> Action | None:
        """This policy's action for ``kind`` (a timeout falls back to ``execution``)."""
        if kind == "timeout":
            return self.timeout if self.timeout is not None else self.execution
        if kind == "invalid_args":
            return self.invalid_args
        return self.execution


_FEED_BACK = FeedBack()


@functools.lru_cache(maxsize=32)
def _config_retry(max_attempts: int) -> Retry:
    """The config's default retry: one frozen value per attempt count, checked once."""
    return Retry(max_attempts=max_attempts)


@dataclass(slots=True)
class PolicySources:
    """Where one tool's recovery policy can come from, most specific first.

    ``config`` is the `ResilienceConfig` with the tool's overrides already applied.
    """

    levels: Sequence[OnError | None] = ()
    config: ResilienceConfig = field(default_factory=ResilienceConfig)
    _config_retry: Retry | None = None

    def resolve(self, kind: FailureKind) -> Action:
        """The action for a ``kind`` failure, by the resolution priority.

        The same failure kind always resolves to the same action object, so attempts are
        counted across the whole tool call.
        """
        for level in self.levels:
            if level is None:
                continue
            action = level.action_for(kind)
            if action is not None:
                return action
        if kind == "invalid_args":
            # Invalid arguments are never retried blindly: the model must change them.
            return _FEED_BACK
        if self._config_retry is None:
            self._config_retry = _config_retry(self.config.max_retries + 1)
        return self._config_retry


class Resolutions:
    """What the tool calls of one agent work out on a failure, reused by its later runs.

    Pure values, each kept with what it follows from, and reused only while those are the
    very objects in force: per tool and kind of failure, the action resolved (and the plan
    of a `Retry`) from the policy levels and the config.
    """

    __slots__ = ("actions",)

    def __init__(self) -> None:
        # (tool, kind) -> (its policy levels, the config, the action, a retry's plan)
        self.actions: dict[tuple[str, str], tuple[Any, ...]] = {}

    def resolve(
        self,
        kind: FailureKind,
        tool: str,
        levels: tuple[OnError | None, OnError | None, OnError | None],
        config: ResilienceConfig,
    ) -> tuple[Action, RetryPlan | None]:
        """The action for a ``kind`` failure of ``tool``, and a retry's plan (`PolicySources`).

        ``levels`` are the tool's own ``on_error``, the agent's for it and the agent's
        defaults; ``config`` has the tool's overrides applied.
        """
        known = self.actions.get((tool, kind))
        if (
            known is not None
            and known[0][0] is levels[0]
            and known[0][1] is levels[1]
            and known[0][2] is levels[2]
            and known[1] is config
        ):
            return known[2], known[3]
        action = PolicySources(levels=levels, config=config).resolve(kind)
        plan = RetryPlan(action, config) if isinstance(action, Retry) else None
        self.actions[(tool, kind)] = (levels, config, action, plan)
        return action, plan


_SHORTHANDS = {
    Retry: "af.retry",
    Fix: "af.fix",
    FeedBack: "af.feed_back",
    RaiseError: "af.raise_error",
    RespondWith: "af.respond_with",
}


def require_on_error(value: object, where: str) -> OnError | None:
    """``value`` if it is an `OnError` (or None); else a `UsageError` naming ``where``.

    A bare action is the likely slip (``on_error=af.retry(2)``): the message shows how to
    put it in a slot, since the action alone does not say which failures it is for.
    """
    if value is None or isinstance(value, OnError):
        return value
    shorthand = _SHORTHANDS.get(type(value))
    if shorthand is None:
        raise UsageError(f"{where} must be af.OnError(...), got {value!r}")
    raise UsageError(
        f"{where} must be af.OnError(...), got {value!r}: put the action in the slot for "
        f"the failures it answers, e.g. af.OnError(execution={shorthand}(...)) "
        "(execution=: the tool raised; invalid_args=: the arguments failed the schema; "
        "timeout=: an attempt ran past its timeout)"
    )


def check_on_tool_error(value: Mapping[str, OnError] | None) -> dict[str, OnError]:
    """Validate an agent's ``on_tool_error`` mapping."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UsageError(
            f"on_tool_error must map tool names to af.OnError(...), got {type(value).__name__}"
        )
    for name, policy in value.items():
        require_on_error(policy, f"on_tool_error[{name!r}]")
    return dict(value)
