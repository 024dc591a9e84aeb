"""An unknown retry strategy is refused with every name a user may pick instead."""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.runtime.backoff import STRATEGIES


def test_an_unknown_strategy_lists_every_strategy_to_pick_from():
    with pytest.raises(af.UsageError) as caught:
        af.retry(2, strategy="fib")
    listed = str(caught.value).split("use one of ", 1)[1]
    assert listed.split(", ") == list(STRATEGIES)
    for name in listed.split(", "):
        assert af.retry(2, strategy=name).strategy == name
