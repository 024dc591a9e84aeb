"""`resilience_configs`: valid retry configurations, each field fixed or drawn."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._strategy_common import ToolLike, given_or, tool_names
from pytest_agentfaults.runtime.backoff import STRATEGIES, ResilienceConfig

__all__ = ["resilience_configs"]

_DELAYS: Final = st.floats(min_value=0.0, max_value=5.0, allow_nan=False, allow_infinity=False)
_HEADROOM: Final = st.floats(min_value=0.0, max_value=60.0, allow_nan=False, allow_infinity=False)
_JITTER: Final = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
_FRACTIONS: Final = _JITTER
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

    ```python
    @given(resilience_configs(strategy="exponential", max_retries=st.integers(1, 3)))
    def test(config): ...
    ```
    """
    names = tool_names(tools, "resilience_configs")
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
        assume(cap >= base)
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

    return build()


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
