"""`ResilienceConfig` and the backoff maths: pure functions of a config and a seed.

Delay before retry n (n = 1, 2, ...):

| strategy | delay |
|---|---|
| ``fixed`` | ``base`` |
| ``linear`` | ``base * n`` |
| ``exponential`` | ``base * 2 ** (n - 1)`` |
| ``exponential_jitter`` | ``base * 2 ** (n - 1) * (1 + U * jitter_factor)``, U uniform in [0, 1) |
| ``none`` | ``0`` |

then ``min(max_delay, delay)``, so no delay ever exceeds ``max_delay``, jitter included.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from contextvars import ContextVar, Token
from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._pending import switch_on
from pytest_agentfaults.runtime.models._model_string import check_model_string

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ResilienceConfig",
    "Strategy",
    "active_seed",
    "backoff_delay",
    "jitter_rng",
    "seeded_jitter",
]

Strategy = Literal["exponential_jitter", "exponential", "linear", "fixed", "none"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
_OVERRIDABLE = frozenset(
    {
        "max_retries",
        "strategy",
        "base_delay",
        "max_delay",
        "jitter_factor",
        "on_exhaustion",
        "timeout_seconds",
    }
)


def backoff_delay(
    strategy: str,
    retry: int,
    *,
    base_delay: float,
    max_delay: float,
    jitter_factor: float = 0.0,
    uniform: float = 0.0,
) -> float:
    """The delay before retry number ``retry`` (1-based). ``uniform`` is U in [0, 1)."""
    if strategy == "none":
        return 0.0
    if strategy == "fixed":
        delay = base_delay
    elif strategy == "linear":
        delay = base_delay * retry
    else:
        # Cap the exponent: 2**1100 overflows a float, and the cap wins long before.
        exponent = retry - 1
        delay = base_delay * 2.0 ** (1023 if exponent > 1023 else exponent)  # noqa: FURB136 - see below
        if strategy == "exponential_jitter":
            delay *= 1.0 + uniform * jitter_factor
    # `min(max_delay, delay)` without the builtin's argument parsing, a third of this
    # function's cost on every retry
    return delay if delay < max_delay else max_delay  # noqa: FURB136


_session_seed: ContextVar[int | None] = ContextVar("agentfaults_jitter_seed", default=None)


def active_seed() -> int | None:
    """The jitter seed active in this context (a test's seed under the plugin), if any."""
    seed = _session_seed.get()
    if seed is None and switch_on():  # a test's first use of the runtime (`_pending`)
        seed = _session_seed.get()
    return seed


# The one unseeded stream, shared: seeding a fresh `Random` from the OS costs ~10 us a run,
# and jitter without a seed only has to differ between runs and processes, not replay. A
# forked child (an xdist worker, a pre-fork server) reseeds it, so no two retry in step.
_unseeded: Final = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unseeded.seed)


def jitter_rng() -> random.Random:
    """A random source for jitter: seeded when a seed is active (tests), else from the OS.

    A seeded stream is new on every call, so each run replays from the seed; the unseeded
    one is shared by every run in the process.
    """
    seed = active_seed()
    return _unseeded if seed is None else random.Random(seed)


class seeded_jitter:
    """Make every jitter drawn in this context reproducible from ``seed``."""

    def __init__(self, seed: int | None) -> None:
        self._seed = seed
        self._set: tuple[ContextVar[int | None], Token[int | None]] | None = None

    def __enter__(self) -> None:
        self._set = set_jitter_seed(self._seed)

    def __exit__(self, *exc_info: object) -> None:
        if self._set is not None:
            variable, token = self._set
            variable.reset(token)


def set_jitter_seed(seed: int | None) -> tuple[ContextVar[int | None], Token[int | None]]:
    """Make jitter drawn in this context reproducible from ``seed``.

    What `seeded_jitter` enters, also for the plugin's per-test switch (`_test_context`);
    returns the variable and the token that resets it.
    """
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    return _session_seed, _session_seed.set(seed)


class ResilienceConfig(BaseModel):
    """How failed tool calls are retried when no per-tool action says otherwise.

    ```python
    config = af.ResilienceConfig(max_retries=2, strategy="fixed", base_delay=0.5)
    config.schedule()                    # [0.5, 0.5]
    ```

    Invalid values raise `UsageError` naming the field and the fix.
    """

    # NaN and the infinities break the maths (a NaN cap caps nothing, an infinite delay
    # never ends): refused, like negatives.
    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, allow_inf_nan=False
    )

    max_retries: int = Field(default=3, ge=0, description="Retries after the first failure.")
    strategy: Strategy = "exponential_jitter"
    base_delay: float = Field(default=1.0, ge=0)
    max_delay: float = Field(default=60.0, ge=0)
    jitter_factor: float = Field(default=0.25, ge=0, le=1)
    on_exhaustion: Literal["return", "raise"] = "return"
    fallback_model: Any = None
    timeout_seconds: float | None = Field(
        default=60.0,
        gt=0,
        description=(
            "Per-attempt timeout (None: none). An attempt past it fails with "
            "ToolTimeoutError. A timeout you set (here or in tool_overrides) is cut at the "
            "deadline: in real time a sync tool then runs on a worker thread, and an "
            "abandoned call keeps running there until it returns, so make such a tool "
            "idempotent, or mark it @af.tool(idempotent=False). The default 60 s is a "
            "backstop checked when a sync tool returns, so by default tools run on your "
            "thread. Async tools are cut at any timeout; under the virtual clock waits on "
            "the clock are cut, and an async tool is cut when the event loop goes idle. See "
            "docs/howto/retries.md."
        ),
    )
    tool_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise UsageError(_explain(exc)) from exc

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy_any_case(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower()
        return value

    @field_validator("fallback_model")
    @classmethod
    def _usable_fallback(cls, value: object) -> object:
        # Checked now, not when the primary model fails: the one moment it is needed.
        if value is None:
            return None
        if isinstance(value, str):
            try:
                check_model_string(value)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
            return value
        if callable(getattr(value, "request", None)) or callable(getattr(value, "arequest", None)):
            return value
        raise ValueError(
            f"{value!r} is not a model: give an af.Model (an object with request(req) and/or "
            "arequest(req)) or a model string such as 'openai:gpt-4o-mini'"
        )

    @field_validator("tool_overrides")
    @classmethod
    def _known_override_fields(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for tool, fields in value.items():
            unknown = sorted(set(fields) - _OVERRIDABLE)
            if unknown:
                valid = ", ".join(sorted(_OVERRIDABLE))
                raise ValueError(
                    f"tool_overrides[{tool!r}] has unknown field(s) {', '.join(unknown)}; "
                    f"valid fields are {valid}"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ResilienceConfig:
        if self.max_delay < self.base_delay:
            raise ValueError(
                f"max_delay ({self.max_delay:g}) is smaller than base_delay "
                f"({self.base_delay:g}); raise max_delay or lower base_delay"
            )
        for tool in self.tool_overrides:
            # Validate each override by building the config it produces.
            self.for_tool(tool)
        return self

    def for_tool(self, tool: str) -> ResilienceConfig:
        """This config with ``tool_overrides[tool]`` applied (itself when there is none)."""
        fields = self.tool_overrides.get(tool)
        if not fields:
            return self
        # Only what was set, so the merged config knows which fields were given on purpose
        # (a timeout set by the user cuts a sync tool; the default one does not).
        merged = self.model_dump(exclude={"tool_overrides", "fallback_model"}, exclude_unset=True)
        merged.update(fields)
        return ResilienceConfig(**merged, fallback_model=self.fallback_model)

    def delay(self, retry: int, uniform: float = 0.0) -> float:
        """The delay before retry number ``retry`` (1-based), given U = ``uniform``."""
        return backoff_delay(
            self.strategy,
            retry,
            base_delay=self.base_delay,
            max_delay=self.max_delay,
            jitter_factor=self.jitter_factor,
            uniform=uniform,
        )

    def schedule(self, seed: int | None = None) -> list[float]:
        """The delays of all `max_retries` retries, in order.

        A pure function of the config and ``seed``; with ``seed=None`` jitter comes from the
        active test seed if any, else from the OS.
        """
        rng = random.Random(seed) if seed is not None else jitter_rng()
        return [self.delay(n, rng.random()) for n in range(1, self.max_retries + 1)]


def _explain(exc: ValidationError) -> str:
    lines = [f"invalid {exc.title}:"]
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "config"
        message = error["msg"].removeprefix("Value error, ")
        hint = _HINTS.get(error["type"], "")
        given = error.get("input")
        shown = "" if isinstance(given, Mapping) else f" (got {given!r})"
        lines.append(f"  {where}: {message}{shown}{hint}")
    return "\n".join(lines)


_HINTS = {
    "literal_error": "",
    "extra_forbidden": "; check the spelling against the documented fields",
    "greater_than_equal": "; negative values make no sense here",
}
