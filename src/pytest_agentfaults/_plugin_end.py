"""A test's end: its state and network guard switched off after every finalizer, then checked.

Done where the teardown's report is made (`end_test`, from the plugin's
``pytest_runtest_makereport`` wrapper, before pytest builds the report): pytest calls it
after the teardown hook whatever a finalizer raised, and the call's outcome is still the
test's to set, so the kit's check fails the test's teardown as a raising hook would. What
skips it (a KeyboardInterrupt or ``pytest.exit`` in a finalizer, which pytest re-raises
before any report) goes through the plugin's ``pytest_runtest_protocol`` wrapper, which
switches the test off then (`switch_off`).

Light like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import pytest

from pytest_agentfaults import _plugin_network as _network
from pytest_agentfaults._plugin_coverage import SCRIPTED
from pytest_agentfaults._plugin_fixtures import ENDED
from pytest_agentfaults._plugin_report import SHOWN
from pytest_agentfaults._plugin_state import STATE, unpend

if TYPE_CHECKING:
    from pytest_agentfaults.testing.session import TestState

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["end_test", "forget_last_attempt", "note_xpass", "switch_off"]


def forget_last_attempt(item: pytest.Item) -> None:
    """A rerun of ``item`` (pytest-rerunfailures runs the same item again): a fresh attempt.

    How the last attempt ended is its own: left on the item, its end (`ENDED`) would make
    the rerun's safety net skip switching it off (a KeyboardInterrupt would leave its
    patches on) and a late read of its trace an error, and its shown trace section
    (`SHOWN`) would keep the rerun's failure from showing its own.
    """
    stash = item.stash
    del stash[ENDED]
    if SHOWN in stash:
        del stash[SHOWN]
    if SCRIPTED in stash:
        del stash[SCRIPTED]


def end_test(item: pytest.Item, call: pytest.CallInfo[None]) -> TestState | None:
    """Switch ``item`` off; if a check of the kit fails, make it the teardown's outcome.

    Returns the test's state (None if it had none), for its teardown report.

    The strict checks (a strict fault that never fired, and the like) fail the test here,
    but only a test whose call passed: a failed, skipped or xfailed test's own outcome is
    the one to read. Their error is reported together with any error of the finalizers.
    """
    __tracebackhide__ = True
    stash = item.stash
    stash[ENDED] = True  # no kit switched on late from here (`running_trace`)
    unpend(item)  # nor on its first use of the runtime
    # `in`, not `stash.get`: a get that misses raises and catches a KeyError
    state = stash[STATE] if STATE in stash else None  # noqa: SIM401
    errors = state.stop() if state is not None else []
    guard = _network.stop_network(item, errors)
    if state is None and guard is None and not errors:
        return None  # nothing of the kit in this test (most tests): nothing to check
    excinfo = call.excinfo
    if excinfo is not None:
        if not isinstance(excinfo.value, Exception):
            return state  # pytest.skip / fail / xfail in a finalizer: its outcome stands
        errors.insert(0, excinfo.value)  # the finalizer's error first
    # a test without kit state (any test under ini `agentfaults_network = block`): its call
    passed = state.passed if state is not None else _network.passed_call(item)
    if state is not None and passed and state.spun is not None:
        errors.append(state.spun)  # swallowed by the code under test: the test fails here
    if state is not None and passed:
        try:
            state.plan.check()
        except Exception as error:
            errors.append(error)
    if guard is not None:
        try:
            _network.check_network(guard, passed=passed)
        except Exception as error:
            errors.append(error)
    if errors and (excinfo is None or len(errors) > 1):
        call.excinfo = _raised(item, errors)
    return state


def note_xpass(state: TestState, report: pytest.TestReport) -> None:
    """An xfail test that passed (XPASS): what the kit's checks find goes in its reason.

    Not a teardown error: pytest makes an xfail test's teardown error "xfailed", so the one
    test would count twice, and the message would be lost. The test's state is left not
    ``passed``, so its teardown checks nothing.
    """
    try:
        state.plan.check()
    except AssertionError as error:
        reason = str(getattr(report, "wasxfail", ""))
        report.wasxfail = f"{reason}; {error}" if reason else str(error)


def _raised(item: pytest.Item, errors: list[Exception]) -> pytest.ExceptionInfo[BaseException]:
    """What the teardown would have raised, caught: pytest reports it as the teardown's."""
    __tracebackhide__ = True
    try:
        _raise(item, errors)
    except BaseException:
        return pytest.ExceptionInfo.from_current()


def _raise(item: pytest.Item, errors: list[Exception]) -> NoReturn:
    __tracebackhide__ = True
    if len(errors) == 1 and isinstance(errors[0], AssertionError):
        # the kit's own check: its message says it all, in every --tb style (native too)
        pytest.fail(str(errors[0]), pytrace=False)
    if len(errors) == 1:
        raise errors[0]
    raise ExceptionGroup(f"errors while tearing down {item.nodeid}", errors)


def switch_off(item: pytest.Item) -> list[Exception]:
    """Switch ``item`` off if `end_test` did not (safe to call twice); what failed."""
    stash = item.stash
    if ENDED in stash:
        return []
    stash[ENDED] = True
    unpend(item)
    state = stash[STATE] if STATE in stash else None  # noqa: SIM401
    errors = state.stop() if state is not None else []
    _network.stop_network(item, errors)
    return errors
