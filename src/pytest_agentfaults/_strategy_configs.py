"""`resilience_configs`: valid retry configurations, each field fixed or drawn."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._strategy_common import ToolLike, given_or, tool_names
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.backoff import STRATEGIES, ResilienceConfig

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["resilience_configs"]

_DELAYS: Final = st.floats(min_value=0.0, max_value=5.0, allow_nan=False, allow_infinity=False)
_HEADROOM: Final = st.floats(min_value=0.0, max_value=60.0, allow_nan=False, allow_infinity=False)
_JITTER: Final = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
_FRACTIONS: Final = _JITTER
_MISSES: Final = 40  # inverted delays drawn, and none fitting, before saying so
_TIMEOUTS: Final = st.one_of(
    st.just(60.0),
    st.none(),
    st.floats(min_value=0.01, max_value=120.0, allow_nan=False, allow_infinity=False),
)


def resilience_configs(
    *,
    strategy: str | SearchStrategy[str] | None = None,
    max_retries: int | SearchStrategy[int] | None = None,
    base_delay: float | SearchStrategy[float] | None = None,
    max_delay: float | SearchStrategy[float] | None = None,
    jitter_factor: float | SearchStrategy[float] | None = None,
    on_exhaustion: str | SearchStrategy[str] | None = None,
    timeout_seconds: float | SearchStrategy[float | None] | None = None,
    tools: ToolLike | Iterable[ToolLike] = (),
) -> SearchStrategy[ResilienceConfig]:
    """Valid `af.ResilienceConfig` objects.

    Each field takes a fixed value or a strategy; left as None it is drawn from a sensible
    default: every strategy, 0 to 5 retries, ``base_delay`` in [0, 5] s, ``max_delay`` at
    least ``base_delay`` (up to 60 s above it), any ``jitter_factor``, either
    ``on_exhaustion``, and a timeout of 60 s, none, or anything up to 120 s (pass
    ``timeout_seconds=st.none()`` for no timeout at all). With ``tools``, some configs get
    ``tool_overrides`` for those tools (one of retries, strategy, jitter, on_exhaustion).
    A fixed value the config refuses (``max_retries=-1``, ``base_delay`` above
    ``max_delay``) raises `UsageError` naming it when the strategy is built; strategies
    that draw such values raise it when drawn.

    ```python
    @given(resilience_configs(strategy="exponential", max_retries=st.integers(1, 3)))
    def test(config): ...
    ```
    """
    names = tool_names(tools, "resilience_configs")
    given = {
        "strategy": strategy,
        "max_retries": max_retries,
        "base_delay": base_delay,
        "max_delay": max_delay,
        "jitter_factor": jitter_factor,
        "on_exhaustion": on_exhaustion,
        "timeout_seconds": timeout_seconds,
    }
    _check_fixed({k: v for k, v in given.items() if not isinstance(v, SearchStrategy)})
    shown = _call({k: v for k, v in given.items() if v is not None})
    delays = _call({k: given[k] for k in ("base_delay", "max_delay")})
    fits = _Fits()
    strategies = given_or(strategy, st.sampled_from(STRATEGIES))
    retries = given_or(max_retries, st.integers(min_value=0, max_value=5))
    jitter = given_or(jitter_factor, _JITTER)
    exhaustion = given_or(on_exhaustion, st.sampled_from(("return", "raise")))
    timeouts: SearchStrategy[float | None] = given_or(timeout_seconds, _TIMEOUTS)
    caps = None if max_delay is None else given_or(max_delay, _HEADROOM)
    bases = None if base_delay is None else given_or(base_delay, _DELAYS)

    @st.composite
    def build(draw: st.DrawFn) -> ResilienceConfig:
        cap = None if caps is None else draw(caps)
        if bases is not None:
            base = draw(bases)
        elif cap is not None:
            # Below a given cap: a fraction of it (or of 5 s), so nothing is rejected.
            base = draw(_FRACTIONS) * min(5.0, cap)
        else:
            base = draw(_DELAYS)
        if cap is None:
            cap = base + draw(_HEADROOM)
        assume(fits.delays(base, cap, delays))
        try:
            return ResilienceConfig(
                max_retries=draw(retries),
                strategy=draw(strategies),
                base_delay=base,
                max_delay=cap,
                jitter_factor=draw(jitter),
                on_exhaustion=draw(exhaustion),
                timeout_seconds=draw(timeouts),
                tool_overrides=_draw_overrides(draw, names),
            )
        except UsageError as exc:
            raise UsageError(
                f"{shown} drew a config that is not valid (narrow the strategy for the field "
                f"named below): {exc}"
            ) from exc

    return build()


class _Fits:
    """Whether a drawn base_delay fits under the drawn max_delay.

    When the strategies given never draw a pair that does, a `UsageError` says so, where
    Hypothesis would fail its filter health check.
    """

    def __init__(self) -> None:
        self.hits = self.misses = 0

    def delays(self, base: float, cap: float, shown: str) -> bool:
        if cap >= base:
            self.hits += 1
            return True
        self.misses += 1
        if not self.hits and self.misses >= _MISSES:
            raise UsageError(
                f"{shown}: every drawn base_delay was above max_delay (the last {base:g} > "
                f"{cap:g}); give max_delay values at least as large as base_delay"
            )
        return False


def _check_fixed(fixed: dict[str, Any]) -> None:
    """Fixed values are checked when the strategy is built, not at its first draw."""
    shown = {k: v for k, v in fixed.items() if v is not None}
    if not shown:
        return
    trial = dict(shown)
    # The other delay is drawn to fit: stand in a value that does.
    if "max_delay" not in trial and isinstance(trial.get("base_delay"), int | float):
        trial["max_delay"] = max(trial["base_delay"], 0)
    if "base_delay" not in trial and "max_delay" in trial:
        trial["base_delay"] = 0.0
    try:
        ResilienceConfig(**trial)
    except UsageError as exc:
        raise UsageError(f"{_call(shown)}: {exc}") from exc


def _call(arguments: dict[str, Any]) -> str:
    listed = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return f"resilience_configs({listed})"


# One field per override, most tools none: cheap to draw, and enough to tell tools apart.
_OVERRIDES: Final = st.one_of(
    st.none(),
    st.integers(min_value=0, max_value=5).map(lambda n: {"max_retries": n}),
    st.sampled_from(STRATEGIES).map(lambda name: {"strategy": name}),
    st.sampled_from(("return", "raise")).map(lambda how: {"on_exhaustion": how}),
    _JITTER.map(lambda factor: {"jitter_factor": factor}),
)


def _draw_overrides(draw: st.DrawFn, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    overrides: dict[str, dict[str, Any]] = {}
    for name in names:
        fields = draw(_OVERRIDES)
        if fields is not None:
            overrides[name] = fields
    return overrides
