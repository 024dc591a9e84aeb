"""How an active `FaultPlan` injects its tool and llm faults at the runtime's seam.

The plan installs one `PlanInterceptor` per activation; the runtime asks it before each
tool attempt and each model call. (Its http faults go through `testing.http` instead.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.runtime.clock import advance_virtually
from pytest_agentfaults.runtime.hooks import (
    PROCEED,
    Attempt,
    Inject,
    Interceptor,
    ModelCall,
    framework_attempt,
)
from pytest_agentfaults.testing._declared import as_declared
from pytest_agentfaults.testing._fault import LLMFault, ToolAction, ToolFault
from pytest_agentfaults.testing.scripted import ScriptedModel

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models.base import ModelResponse
    from pytest_agentfaults.testing.faults import FaultPlan
    from pytest_agentfaults.testing.steps import ScriptStep

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["PlanInterceptor"]


class PlanInterceptor(Interceptor):
    """Applies a plan's tool and llm faults at the runtime's interception seam.

    It is asked before every tool attempt and model call of every run in the test, so it
    sorts the plan's faults by target once (again only when faults are added) rather than
    scanning them all at each attempt.
    """

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        # The plan's fault list and its length when they were sorted (see `_sort`).
        self._sorted_for: tuple[list[Any] | None, int] = (None, -1)
        # tool -> (its faults, those on the tool itself (not ``function=``), the target's key)
        self._tools: dict[str, tuple[list[ToolFault], list[ToolFault], tuple[str, str]]] = {}
        self._llm: dict[str | None, list[LLMFault]] = {}
        # id(fault) -> (what it injects, `injects`' answer): each hit of a fault says the same
        self._described: dict[int, tuple[Any, ...]] = {}

    def _sort(self) -> None:
        """File the plan's tool faults by tool and llm faults by agent, in declared order."""
        faults = self.plan.faults
        sorted_for = self._sorted_for
        if sorted_for[0] is faults and sorted_for[1] == len(faults):
            return
        tools: dict[str, list[ToolFault]] = {}
        llm: dict[str | None, list[LLMFault]] = {}
        for fault in faults:
            if isinstance(fault, ToolFault):
                tools.setdefault(fault.tool, []).append(fault)
            elif isinstance(fault, LLMFault):
                llm.setdefault(fault.agent, []).append(fault)
        self._tools = {
            tool: (named, [f for f in named if not f.function], ("tool", tool))
            for tool, named in tools.items()
        }
        self._llm, self._sorted_for = llm, (faults, len(faults))

    def tool_faults(self, tool: str) -> list[ToolFault]:
        """The plan's faults on ``tool`` (``function=`` ones included), in declared order."""
        self._sort()
        filed = self._tools.get(tool)
        return [] if filed is None else filed[0]

    def tool_attempt(self, attempt: Attempt) -> Any:
        name = attempt.tool.name
        if attempt.rec is None and framework_attempt() == name:
            return PROCEED  # `Tool.invoke` inside a framework's attempt at it: that attempt
        plan = self.plan
        plan.tools_called.add(name)  # for the message of a tool fault that never fired
        if plan.learned is not None and attempt.kwargs:  # a password it quotes in an error
            plan.learned.learn_arguments(attempt.kwargs)
        self._sort()
        filed = self._tools.get(name)
        if filed is None:
            return PROCEED
        named, candidates, key = filed
        if not candidates:
            return PROCEED
        hit = plan.next_fault(key, candidates)
        if hit is None:
            return PROCEED
        fault, occurrence = hit
        action, text, shown = self.injects(fault)
        if action is None:
            fault.check()  # raises: the fault says nothing to inject
        plan.record(fault, name, action or "", occurrence)
        rec = attempt.rec
        if rec is not None:  # a run's attempt: its recorder makes the event at once
            rec.tool_fault(
                name,
                attempt.call_id,
                attempt.number,
                action,
                shown,
                _any_non_idempotent(named),
            )
        else:
            fields: dict[str, Any] = {
                "tool": name,
                "call_id": attempt.call_id,
                "attempt": attempt.number,
                "framework": "agentfaults",
                "status": action,
                "detail": text,
            }
            if _any_non_idempotent(named):
                fields["idempotent"] = False
            attempt.emit("tool.fault", **fields)
        raises = fault.raises
        if raises is not None:
            return Inject(raises() if isinstance(raises, type) else as_declared(raises))
        if fault.delay is None:
            return fault.returns
        # delay: latency, then the tool runs, unless the latency trips the attempt deadline
        if not advance_virtually(attempt.clock, fault.delay):
            attempt.clock.sleep(fault.delay)
        return PROCEED

    def injects(self, fault: ToolFault) -> tuple[ToolAction | None, str, str]:
        """``fault.action``, ``fault.describe()``, and that text redacted for an event.

        Worked out once per fault while what it injects stays the same: each follows from it.
        """
        kept = self._described.get(id(fault))
        if (
            kept is not None
            and kept[0] is fault.raises
            and kept[1] is fault.returns
            and kept[2] is fault.delay
            and kept[3] is fault.tool
        ):
            return kept[4]  # type: ignore[no-any-return]
        text = fault.describe()
        said = (fault.action, text, redact(text))
        self._described[id(fault)] = (fault.raises, fault.returns, fault.delay, fault.tool, said)
        return said

    def declares_non_idempotent(self, tool: str) -> bool:
        return _any_non_idempotent(self.tool_faults(tool))

    def model_call(self, call: ModelCall) -> Any:
        hit = self.llm_fault(call.request.agent)
        if hit is None:
            return PROCEED
        fault, occurrence = hit
        model = call.model
        model_name = str(getattr(model, "name", type(model).__name__))
        self.plan.record(fault, model_name, fault.kind, occurrence)
        call.request.emit(
            "llm.fault", status=fault.kind, detail=f"{fault.describe()} on {model_name}"
        )
        outcome = _respond_instead(model, call, fault.step(), model_name, self.plan)
        if type(outcome) is Inject:
            _say_injected(outcome.error, redact(fault.written))
        return outcome

    def llm_fault(self, agent: str) -> tuple[LLMFault, int] | None:
        """The llm fault that hits this model call of ``agent``, if any.

        Faults with ``agent=`` count that agent's calls alone and are asked first; the
        others count every agent's calls, except one an ``agent=`` fault answered (as
        for http targets: the first that hits answers, later ones do not see the call).
        """
        self._sort()
        llm = self._llm
        if not llm:
            return None
        self.plan.agents_called.add(agent)  # for the message of an agent= fault never fired
        aimed = llm.get(agent)
        hit = self.plan.next_fault(("llm", agent), aimed) if aimed else None
        if hit is not None:
            return hit
        anyone = llm.get(None)
        return self.plan.next_fault(("llm",), anyone) if anyone else None


def _any_non_idempotent(faults: list[ToolFault]) -> bool:
    """Whether one of ``faults`` declares its tool non-idempotent.

    A loop, not ``any(<generator>)``: the runtime asks this on every attempt of a tool
    that has faults, and a generator costs more to make than the loop to run.
    """
    for fault in faults:  # noqa: SIM110 - see the docstring
        if fault.idempotent is False:
            return True
    return False


def _say_injected(error: BaseException, source: str) -> None:
    """Note on an injected model failure who injected it and how an agent recovers."""
    if isinstance(error, UsageError):  # not a failure to recover from: the fault is wrong
        note = f"from {source}: fix the fault as the error says"
    else:
        note = (
            f"injected by {source}; an Agent rethrows a model error by default: give it "
            "on_llm_error=... to retry (see docs/howto/llm-errors.md), or expect the error "
            "with pytest.raises"
        )
    if note not in getattr(error, "__notes__", ()):  # one instance may be raised again
        error.add_note(note)


def _respond_instead(
    model: Any, call: ModelCall, step: ScriptStep, model_name: str, plan: FaultPlan
) -> ModelResponse | Inject:
    """Answer ``call`` with ``step`` in place of the model, which is not called.

    Every kind leaves the script alone: a transient kind fails the call, a malformed kind
    is an answer the model gave *before* its scripted one, and the step stays for the
    next call. Using it up would let a fault eat a ``call_tool`` step, and a test pass
    while its tool never ran. A step that fails (a 503, a timeout ...) comes back as
    `Inject(error)`.
    """
    try:
        if isinstance(model, ScriptedModel):
            return model.substitute(call.request, step)
        return step.respond(call.request, model=model_name, next_call_id=plan.next_call_id)
    except Exception as exc:  # the injected failure itself
        return Inject(exc)
