"""Golden traces: ``trace.assert_matches_snapshot(path, exact_times=False)``.

A snapshot is the trace in a form that is stable from run to run. By default it keeps only
what the seed cannot change: event kinds, targets, attempts, outcomes and errors, with run
ids and tool-call ids numbered in order of appearance and loopback ports left out. Times
and backoff delays (jittered, so they change with ``--agentfaults-seed``) are left out;
a retry keeps only whether it waited (``"waited": true``). So a committed golden trace
passes under any seed.

``exact_times=True`` keeps the event times and delays as well. Such a file says so (and
names the session seed it was written under): it matches only under that seed.

A missing file is written, except in CI (the ``CI`` environment variable set, as
insta reads it): there the file was never committed, or the path is wrong, and writing
it would make the test pass while comparing nothing, so the test fails.

Rewrite snapshots with ``pytest --agentfaults-update-snapshots``. Files written by earlier
versions (no ``"format"`` key) are still read, and compared in the form asked for.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from contextvars import ContextVar, Token
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from pytest_agentfaults._redact import LearnedSecrets, redact_value
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._pending import switch_on

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Trace

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["SnapshotSettings", "assert_matches_snapshot", "in_ci", "normalise", "use_snapshots"]

FORMAT: Final = 2
_UPDATE: Final = "pytest --agentfaults-update-snapshots"
_LOOPBACK_PORT: Final = re.compile(r"(127\.0\.0\.1|localhost|\[::1\]):\d+")


@dataclass(frozen=True, slots=True)
class SnapshotSettings:
    """Where relative snapshot paths live, whether to rewrite the files, the session seed.

    And the session's `LearnedSecrets`: a golden file is committed, so a key the kit
    learned is redacted from it by value, as from a trace file. One per pytest session
    (the plugin builds it from the rootdir, the seed, ``--agentfaults-update-snapshots``
    and the learned keys) and switched on per test with `use_snapshots`, so a session
    run inside another (pytester) never changes the outer one's.
    """

    root: Path | None = None
    update: bool = False
    seed: int | None = None
    learned: LearnedSecrets | None = None
    #: the value of the ``CI`` environment variable when it says the session runs in CI
    #: (set, and not ``""``, ``0``, ``false`` or ``no``); None elsewhere
    ci: str | None = None


def in_ci() -> str | None:
    """The ``CI`` environment variable when it says this runs in CI (insta's rule), else None.

    Set to anything but ``""``, ``0``, ``false`` or ``no`` (any case): the plugin reads it
    once per session, and a missing golden trace then fails instead of being written.
    """
    value = os.environ.get("CI")
    if value is None or value.strip().lower() in ("", "0", "false", "no"):
        return None
    return value


#: the snapshot settings variable and a token that resets it
_Set: TypeAlias = "tuple[ContextVar[SnapshotSettings | None], Token[SnapshotSettings | None]]"

_settings: ContextVar[SnapshotSettings | None] = ContextVar(
    "agentfaults_snapshot_settings", default=None
)


class use_snapshots:
    """Make ``settings`` the snapshot settings in this context (the plugin, per test)."""

    def __init__(self, settings: SnapshotSettings | None) -> None:
        self._settings = settings
        self._set: _Set | None = None

    def __enter__(self) -> SnapshotSettings | None:
        self._set = set_snapshot_settings(self._settings)
        return self._settings

    def __exit__(self, *exc_info: object) -> None:
        if self._set is not None:
            variable, token = self._set
            variable.reset(token)


def set_snapshot_settings(settings: SnapshotSettings | None) -> _Set:
    """Make ``settings`` the snapshot settings in this context.

    What `use_snapshots` enters, also for the plugin's per-test switch (`_test_context`);
    returns the variable and the token that resets it.
    """
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    return _settings, _settings.set(settings)


def normalise(trace: Trace, *, exact_times: bool = False) -> list[dict[str, Any]]:
    """The trace's events in the stored form (see the module docstring)."""
    dumped = [event.model_dump(mode="json", exclude_none=True) for event in trace.events]
    return _stable(dumped, exact_times)


def _stable(events: list[dict[str, Any]], exact_times: bool) -> list[dict[str, Any]]:
    """``events`` (dumped) in the stored form; also projects an older file's events."""
    ids: dict[tuple[str, str], str] = {}

    def renumber(kind: str, value: str) -> str:
        return ids.setdefault((kind, value), f"{kind}-{sum(k == kind for k, _ in ids) + 1}")

    stored = []
    for raw in events:
        data = {key: _unport(value) for key, value in raw.items()}
        for key, kind in (("run_id", "run"), ("parent_run_id", "run"), ("call_id", "call")):
            if isinstance(data.get(key), str):
                data[key] = renumber(kind, data[key])
        if exact_times:
            data["at"] = round(float(data.get("at", 0.0)), 6)
        else:
            data.pop("at", None)
            delay = data.pop("delay", None)
            if isinstance(delay, int | float):
                data["waited"] = delay > 0
                if isinstance(data.get("detail"), str):
                    data["detail"] = data["detail"].replace(f"{delay:g}s", "<wait>")
        stored.append(data)
    return stored


def _unport(value: Any) -> Any:
    # The loopback server listens on a new port every session.
    if isinstance(value, str):
        return _LOOPBACK_PORT.sub(r"\1:<port>", value)
    if isinstance(value, dict):
        return {key: _unport(item) for key, item in value.items()}
    return value


def _document(events: list[dict[str, Any]], exact_times: bool, seed: int | None) -> dict[str, Any]:
    if not exact_times:
        note = "seed-free: times and delays left out; a retry keeps only whether it waited"
        return {"format": FORMAT, "times": "none", "note": note, "events": events}
    under = f"--agentfaults-seed={seed}" if seed is not None else "the seed it was written with"
    note = f"exact times (exact_times=True): matches only under {under}"
    return {"format": FORMAT, "times": "exact", "seed": seed, "note": note, "events": events}


def _dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def assert_matches_snapshot(trace: Trace, path: str | Path, *, exact_times: bool = False) -> None:
    """Compare ``trace`` with the golden file at ``path`` (relative to the rootdir).

    ``--agentfaults-update-snapshots``, or a missing file outside CI, writes it instead.
    """
    __tracebackhide__ = True
    settings = _settings.get()
    if settings is None and switch_on():  # a test's first use of the runtime (`_pending`)
        settings = _settings.get()
    settings = settings or SnapshotSettings()
    target = Path(path)
    if not target.is_absolute() and settings.root is not None:
        target = settings.root / target
    events = normalise(trace, exact_times=exact_times)
    if settings.learned:  # the known shapes were redacted as the events were recorded
        events = redact_value(events, settings.learned)
    mine = _document(events, exact_times, settings.seed)
    if not settings.update and settings.ci is not None and not target.exists():
        raise AssertionError(
            f"golden trace {target} does not exist, and in CI (CI={settings.ci!r}) a missing "
            "one fails instead of being written: the file would be lost with the CI machine, "
            "and the test would compare nothing\n"
            f"run the test where the file is kept (or {_UPDATE}) and commit it, or fix the "
            "path"
        )
    if settings.update or not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_dumps(mine), encoding="utf-8")
        return
    golden = _read(target)
    old_format = golden.get("format") != FORMAT
    if not old_format:
        if golden.get("times") == "exact" and not exact_times:
            raise AssertionError(
                f"golden trace {target} keeps exact times, but assert_matches_snapshot() was "
                f"called without exact_times=True; pass exact_times=True, or rewrite the "
                f"file in the seed-free form with {_UPDATE}"
            )
        if golden.get("times") != "exact" and exact_times:
            raise AssertionError(
                f"golden trace {target} is seed-free (no times), but assert_matches_snapshot() "
                f"was called with exact_times=True; drop it, or rewrite the file with {_UPDATE}"
            )
    expected = _stable(golden["events"], exact_times)
    if expected == mine["events"]:
        return
    raise AssertionError(_mismatch(target, golden, expected, mine, old_format, settings.seed))


def _old_format_note(golden: dict[str, Any]) -> str:
    """What a golden file without this version's ``format`` key is: older, or hand-written."""
    events = golden.get("events") or []
    if any(isinstance(e, dict) and ("at" in e or "delay" in e) for e in events):
        return (
            "the file is in an older format (it stored times and delays); rewriting it once "
            "makes it seed-free"
        )
    return (
        'the file has no "format" key: it was not written by assert_matches_snapshot(); '
        "rewriting it stores this run's trace in the seed-free form"
    )


def _read(target: Path) -> dict[str, Any]:
    __tracebackhide__ = True
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"golden trace {target} is not valid JSON ({exc}); delete it or rewrite it "
            f"with {_UPDATE}"
        ) from None
    if isinstance(data, list):  # a bare event list
        data = {"events": data}
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise UsageError(
            f'golden trace {target} has no "events" list; delete it or rewrite it with {_UPDATE}'
        )
    return data


def _mismatch(
    target: Path,
    golden: dict[str, Any],
    expected: list[dict[str, Any]],
    mine: dict[str, Any],
    old_format: bool,
    seed: int | None,
) -> str:
    diff = "".join(
        difflib.unified_diff(
            _dumps({"events": expected}).splitlines(keepends=True),
            _dumps({"events": mine["events"]}).splitlines(keepends=True),
            fromfile=f"{target} (golden)",
            tofile="this run",
        )
    )
    lines = [f"trace does not match the golden trace {target}"]
    if mine["times"] == "exact":
        written = golden.get("seed")
        lines.append(
            "it keeps exact times (exact_times=True), which match only under the seed it was "
            f"written with (--agentfaults-seed={written}); this session's seed is {seed}"
            if written is not None and written != seed
            else "it keeps exact times (exact_times=True): a changed delay or time fails it"
        )
    else:
        lines.append(
            "compared in the seed-free form: event kinds, targets, attempts and outcomes "
            "(times and delays left out)"
        )
    if old_format:
        lines.append(_old_format_note(golden))
    lines.append(f"if the change is intended, rewrite it: {_UPDATE}")
    return "\n".join(lines) + "\n" + diff
