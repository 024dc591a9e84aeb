"""The fault plan's counting (``times``, ``at``, ``probability``) against a reference model.

The contract (testing/faults.py): an occurrence is one attempt at a target; the faults on
one target apply one after another in declared order; the current one sees each
occurrence, hits from the ``at``-th occurrence it sees, ``times`` times in all; with a
``probability`` each occurrence it would hit is a draw from the plan's seeded stream
(``random.Random(seed)``, one draw per such occurrence, in order). Hypothesis drives a
plan and the model side by side through any interleaving of declarations and occurrences.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import pytest_agentfaults as af
from pytest_agentfaults.testing.faults import FaultPlan, ToolFault

TOOLS = ["fetch", "parse"]


@dataclass
class ModelFault:
    times: int
    at: int
    probability: float | None
    seen: int = 0
    hits: int = 0


class PlanCounting(RuleBasedStateMachine):
    """A `FaultPlan` and the reference model, fed the same declarations and occurrences."""

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.plan = FaultPlan(seed=seed)
        self.stream = random.Random(seed)
        self.model: dict[str, list[ModelFault]] = {tool: [] for tool in TOOLS}
        self.real: dict[str, list[ToolFault]] = {tool: [] for tool in TOOLS}
        self.occurrences = dict.fromkeys(TOOLS, 0)

    @rule(
        tool=st.sampled_from(TOOLS),
        times=st.integers(1, 3),
        at=st.integers(1, 4),
        probability=st.one_of(st.none(), st.sampled_from([0.25, 0.5, 1.0])),
    )
    def declare(self, tool: str, times: int, at: int, probability: float | None) -> None:
        builder = self.plan.tool(tool).raises(ConnectionError("reset")).times(times).at(at)
        if probability is not None:
            builder.probability(probability)
        self.real[tool].append(self.plan.faults[-1])  # type: ignore[arg-type]
        self.model[tool].append(ModelFault(times, at, probability))

    @rule(tool=st.sampled_from(TOOLS))
    def occur(self, tool: str) -> None:
        self.occurrences[tool] += 1
        expected = self.model_hit(tool)
        candidates = self.real[tool]
        key = candidates[0].key if candidates else ToolFault(tool=tool).key
        got = self.plan.next_fault(key, candidates)
        if expected is None:
            assert got is None
        else:
            assert got is not None
            fault, occurrence = got
            assert fault is self.real[tool][expected]
            assert occurrence == self.occurrences[tool]

    def model_hit(self, tool: str) -> int | None:
        """The index of the fault the model says hits this occurrence, or None."""
        for index, fault in enumerate(self.model[tool]):
            if fault.hits >= fault.times:
                continue  # done: the next one is current
            fault.seen += 1
            if fault.seen < fault.at:
                return None
            if fault.probability is not None and self.stream.random() >= fault.probability:
                return None
            fault.hits += 1
            return index
        return None

    @invariant()
    def progress_matches(self) -> None:
        for tool in TOOLS:
            for real, model in zip(self.real[tool], self.model[tool], strict=True):
                assert (real.seen, real.hits) == (model.seen, model.hits)
                assert real.done == (model.hits >= model.times)


TestPlanCounting = PlanCounting.TestCase
TestPlanCounting.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


def test_at_skips_the_first_occurrences_then_times_hits_in_a_row():
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError()).times(2).at(3)
    fault = plan.faults[0]
    hits = [plan.next_fault(fault.key, [fault]) is not None for _ in range(6)]
    assert hits == [False, False, True, True, False, False]
    assert fault.done


def test_the_next_fault_on_a_target_starts_counting_when_it_becomes_current():
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError()).times(1)
    plan.tool("fetch").raises(TimeoutError()).at(2)
    first, second = plan.faults
    hits = [plan.next_fault(first.key, [first, second]) for _ in range(4)]
    assert [hit[0] if hit else None for hit in hits] == [first, None, second, None]
    # the occurrence number counts every attempt at the target
    assert [hit[1] for hit in hits if hit] == [1, 3]


def test_a_probabilistic_plan_fires_the_same_occurrences_for_the_same_seed():
    def fired(seed: int) -> list[int]:
        plan = FaultPlan(seed=seed)
        plan.tool("fetch").raises(ConnectionError()).times(5).probability(0.5)
        fault = plan.faults[0]
        return [n for n in range(1, 40) if plan.next_fault(fault.key, [fault])]

    assert fired(3) == fired(3)
    assert len(fired(3)) == 5
    assert fired(3) != fired(4)


def test_a_fresh_copy_of_a_fault_has_hit_nothing_and_keeps_its_settings():
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError("x")).times(2).at(2).probability(0.5).strict(False)
    fault = plan.faults[0]
    fault.seen, fault.hits = 5, 2
    assert fault.done
    copy = fault.fresh()
    assert (copy.seen, copy.hits, copy.done) == (0, 0, False)
    assert (copy.times, copy.at, copy.probability, copy.strict) == (2, 2, 0.5, False)
    assert copy.source == fault.source
    assert copy.tool == "fetch"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_times_and_at_refuse_what_is_not_a_positive_int(bad):
    with pytest.raises(af.UsageError, match="times"):
        FaultPlan().tool("fetch").times(bad)
    with pytest.raises(af.UsageError, match="at"):
        FaultPlan().tool("fetch").at(bad)


def test_an_unfired_http_fault_is_named_by_the_call_that_declared_it():
    plan = FaultPlan()
    plan.http(url="https://api.example.com/v1", method="post").status(503)
    plan.http().status(500)
    with pytest.raises(AssertionError) as caught:
        plan.check()
    lines = str(caught.value).splitlines()
    assert lines[0] == (
        "fault on http POST https://api.example.com/v1 never fired: "
        "faults.http(url='https://api.example.com/v1', method='post').status(503)"
    )
    assert "fault on http (any request) never fired: faults.http().status(500)" in lines


def test_the_tool_calls_a_plan_makes_up_are_numbered_in_order():
    plan = FaultPlan()
    assert [plan.next_call_id() for _ in range(3)] == [
        "fault_call_1",
        "fault_call_2",
        "fault_call_3",
    ]


def test_each_http_target_counts_a_request_it_matches_on_its_own():
    plan = FaultPlan()
    plan.http(url="https://api.example.com/v1").status(503).at(2)
    plan.http().status(500)
    specific, anywhere = plan.faults
    # the first request is occurrence 1 of both targets: the specific one waits for its
    # second, the catch-all hits
    first = plan.next_http_fault("POST", "https://api.example.com/v1")
    assert first is not None
    assert first[0] is anywhere
    second = plan.next_http_fault("POST", "https://api.example.com/v1")
    assert second is not None
    assert second[0] is specific
    assert second[1] == 2


def test_an_http_fault_matches_the_method_it_names_only():
    plan = FaultPlan()
    plan.http(url="https://api.example.com/v1", method="post").status(503)
    assert plan.next_http_fault("GET", "https://api.example.com/v1") is None
    assert plan.next_http_fault("POST", "https://api.example.com/v1") is not None


def test_the_loopback_server_matches_a_provider_url_on_any_host():
    plan = FaultPlan()
    plan.http(url="https://api.openai.com/v1/chat/completions").status(503).times(2)
    loopback = "http://127.0.0.1:5000/v1/chat/completions"
    assert plan.next_http_fault("POST", loopback) is None  # a real client: another host
    assert plan.next_http_fault("POST", loopback, any_host=True) is not None


def test_the_http_layer_is_only_there_inside_an_active_plan():
    with pytest.raises(af.UsageError) as caught:
        FaultPlan().http_layer()
    assert str(caught.value) == "plan.http_layer() works inside `with plan.active():` only"
