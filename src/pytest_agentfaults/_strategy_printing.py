"""Falsifying examples printed as the code that makes them (plans and scripted steps)."""

from __future__ import annotations

from typing import Any

from hypothesis.vendor import pretty

from pytest_agentfaults.testing.faults import Fault, FaultPlan, HTTPFault, ToolFault
from pytest_agentfaults.testing.steps import Step

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["register_printers"]


def _fault_source(fault: Fault, *, show_strict: bool = True) -> str:
    """The builder calls that add ``fault`` to a plan, as a user would write them."""
    if isinstance(fault, ToolFault):
        value = {"raises": fault.raises, "delay": fault.delay}.get(
            fault.action or "", fault.returns
        )
        call = f"tool({fault.tool!r}).{fault.action}({value!r})"
    elif isinstance(fault, HTTPFault):
        where = ", ".join(
            f"{key}={value!r}"
            for key, value in (("url", fault.url), ("method", fault.method))
            if value
        )
        if fault.status is not None:
            extra = "" if fault.retry_after is None else f", retry_after={fault.retry_after!r}"
            call = f"http({where}).status({fault.status!r}{extra})"
        else:
            call = f"http({where}).{fault.kind}()"
    elif fault.kind in ("malformed_tool_args", "truncated"):
        kind = "tool_args" if fault.kind == "malformed_tool_args" else "truncated"
        options = "".join(f", {k}={v!r}" for k, v in fault.options.items() if v is not None)
        call = f"llm.malformed({kind!r}{options})"
    else:
        options = ", ".join(f"{k}={v!r}" for k, v in fault.options.items() if v is not None)
        call = f"llm.{fault.kind}({options})"
    if fault.times != 1:
        call += f".times({fault.times})"
    if fault.at != 1:
        call += f".at({fault.at})"
    if fault.probability is not None:
        call += f".probability({fault.probability!r})"
    if show_strict and not fault.strict:
        call += ".strict(False)"
    return call


def _pretty_plan(plan: FaultPlan, printer: Any, cycle: bool) -> None:
    """Print ``FaultPlan(seed=0, faults=[tool('fetch').raises(...).times(2), ...])``."""
    lenient = bool(plan.faults) and not any(fault.strict for fault in plan.faults)
    calls = [_fault_source(fault, show_strict=not lenient) for fault in plan.faults]
    opening = f"FaultPlan(seed={plan.seed!r}{', strict=False' if lenient else ''}, faults=["
    with printer.group(4, opening, "])"):
        for index, call in enumerate(calls):
            if index:
                printer.text(",")
            printer.breakable("" if index == 0 else " ")
            printer.text(call)


def _pretty_step(step: Step, printer: Any, cycle: bool) -> None:
    """Print a scripted step as its constructor (``call_tool('fetch', '{}')``), not its fields."""
    printer.text(repr(step))


def _step_classes() -> list[type[Any]]:
    found: list[type[Any]] = []
    pending: list[type[Any]] = [Step]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def register_printers() -> None:
    """Teach Hypothesis's pretty-printer to show plans and steps as the code that makes them.

    Hypothesis prints a falsifying example with its vendored pretty-printer, which shows a
    dataclass field by field and a plan as ``<FaultPlan 2 faults, 0 fired>``. Registered by
    each class's own ``__module__`` and name, so it holds wherever the class says it lives.
    """
    pretty.for_type_by_name(FaultPlan.__module__, FaultPlan.__name__, _pretty_plan)
    for cls in _step_classes():
        pretty.for_type_by_name(cls.__module__, cls.__name__, _pretty_step)
