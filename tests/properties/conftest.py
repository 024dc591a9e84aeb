"""Hypothesis profiles for the property suite.

``ci`` (the default): 60 examples per property, derandomized (every CI run tests the same
examples), no example database, no deadline. ``deep``: 10,000 examples per property, fresh
random examples on every run, for a release or after touching the runtime's recovery code.
``mutation``: 20 examples per property, derandomized, no deadline; ``scripts/mutation.sh``
selects it, because mutmut runs these properties again for every mutant of the run loop
(the properties of pure functions, such as ``test_caps.py``, keep their own minimum):

    AGENTFAULTS_PROFILE=deep python -m pytest tests/properties -p no:cacheprovider
    python -m pytest tests/properties --hypothesis-profile=deep      # the same
    AGENTFAULTS_PROFILE=deep python -m pytest tests/properties -n 2  # with pytest-xdist

(``--hypothesis-profile=deep`` needs ``tests/properties`` on the command line, so that this
file is loaded before Hypothesis looks the profile up; the variable works from anywhere.)

The profiles apply to the tests of this directory only (they are not loaded globally), so
the rest of the suite keeps its own Hypothesis settings. A test module asks for the selected
one with ``settings.get_profile("agentfaults-properties")``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

PROFILES = ("ci", "deep", "mutation")
SELECTED_PROFILE = "agentfaults-properties"

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "mutation",
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=10_000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _select(option: str | None) -> str:
    chosen = os.environ.get("AGENTFAULTS_PROFILE", "").strip() or option or "ci"
    if chosen not in PROFILES:
        if os.environ.get("AGENTFAULTS_PROFILE"):
            raise pytest.UsageError(
                f"AGENTFAULTS_PROFILE={chosen!r}: use one of {', '.join(PROFILES)}"
            )
        chosen = "ci"  # some other --hypothesis-profile: the property suite stays on ci
    settings.register_profile(SELECTED_PROFILE, parent=settings.get_profile(chosen))
    return chosen


def pytest_configure(config: pytest.Config) -> None:
    # After the command line is parsed and before any test module is imported.
    config.stash[_SELECTED] = _select(config.getoption("--hypothesis-profile", None))


_SELECTED = pytest.StashKey[str]()
_select(None)


def pytest_report_header(config: pytest.Config) -> str:
    chosen = config.stash.get(_SELECTED, "ci")
    return f"agentfaults property profile: {chosen!r} (AGENTFAULTS_PROFILE=ci|deep|mutation)"
