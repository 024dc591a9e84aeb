"""A framework tool's failure streaks: when an attempt is the retry of a failed one.

The core (`_core`) keeps, per tool and run, the streak of its failed attempts. An attempt
the framework makes in answer to a failure of that streak (`Site` says what the framework
knows of it) is its retry: numbered within the streak, with the wait since the failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pytest_agentfaults.runtime.clock import Clock, VirtualClock, sleeps_virtually_here
from pytest_agentfaults.runtime.events import ErrorRecord

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Failing", "Site", "answers", "run_key", "same_run", "waited"]


@dataclass(frozen=True, slots=True)
class Site:
    """What the framework says of one attempt: which run, which model turn, which call.

    The core calls an attempt after a failed one of the same tool a *retry* only when the
    framework made it in answer to that failure. Each field the adapter knows narrows it:

    - ``run``: the framework run's own object (or its id str); a failure of another run
      is not retried by this one (a test that runs the agent twice);
    - ``turn``: the model turn (or graph step) that asked for the call; a failure of the
      same turn is not retried by it: they are parallel calls of one answer;
    - ``call_id``: the call's id; the same id attempted again is a retry, whatever the turn.

    None is unknown: with nothing known, any attempt after a failure is its retry.
    """

    run: object = None
    turn: object = None
    call_id: str | None = None


@dataclass(slots=True)
class Failing:
    """The failure streak of one tool in one run: its length, its last error and where.

    ``calls`` holds, by call id, the attempt number and error of each call that failed in
    it: parallel calls of one turn that failed are each attempted again by a rerun of
    that turn (a LangGraph ``RetryPolicy``), each its own retry.
    """

    streak: int
    error: ErrorRecord
    site: Site
    calls: dict[str, tuple[int, ErrorRecord]]
    at: float  # when the last failure ended, on the test's clock
    wall: float  # the same, on the real clock (`time.perf_counter`)


def answers(failed: Failing, now: Site) -> tuple[int, ErrorRecord, bool, bool] | None:
    """The retry an attempt at ``now`` makes of ``failed`` (None: it makes none).

    Its attempt number, the error it answers, whether it is the same call again, and
    whether the model asked for it (a later turn's call). Both are of one run.
    """
    same = failed.calls.get(now.call_id) if now.call_id is not None else None
    if same is not None:  # the same call, attempted again (with_retry, a RetryPolicy)
        return same[0] + 1, same[1], True, False
    if failed.site.turn is None or now.turn is None:  # no turns: the code called again
        return failed.streak + 1, failed.error, False, False
    if failed.site.turn == now.turn:
        return None  # the same turn: a parallel call, not a retry
    return failed.streak + 1, failed.error, False, True


def waited(failed: Failing, clock: Clock) -> float:
    """The wait between ``failed``'s last failure and now, on the test's clock.

    Which the sleeps of the test's thread and event loops move; when it stood still and
    this attempt runs on another thread, whose sleeps stay real (a sync LangGraph graph's
    executor), on the real clock.
    """
    waited = clock.now() - failed.at
    if waited <= 0 and isinstance(clock, VirtualClock) and not sleeps_virtually_here(clock):
        waited = time.perf_counter() - failed.wall
    return max(waited, 0.0)


def same_run(one: object, other: object) -> bool:
    # A run's own object is compared by identity (dataclasses compare equal by value); an
    # id string by value; None (unknown) is the same as None.
    return one is other or (isinstance(one, str) and one == other)


def run_key(run: object) -> object:
    """A run as a dict key: its id string, or its own object's id (None: unknown)."""
    return run if run is None or isinstance(run, str) else id(run)
