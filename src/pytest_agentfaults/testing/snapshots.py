"""Golden traces: ``trace.assert_matches_snapshot(path)``.

A snapshot is the trace normalised so it is stable from run to run: run ids are numbered
in order of appearance, times are rounded, and nothing random or wall-clock remains.
Rewrite snapshots with ``pytest --agentfaults-update-snapshots``.
"""

from __future__ import annotations

import difflib
import json
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Trace

__all__ = ["SnapshotSettings", "assert_matches_snapshot", "normalise", "use_snapshots"]


@dataclass(frozen=True, slots=True)
class SnapshotSettings:
    """Where relative snapshot paths live, and whether to rewrite the files.

    One per pytest session (the plugin builds it from the rootdir and
    ``--agentfaults-update-snapshots``) and switched on per test with `use_snapshots`, so
    a session run inside another (pytester) never changes the outer one's.
    """

    root: Path | None = None
    update: bool = False


_settings: ContextVar[SnapshotSettings | None] = ContextVar(
    "agentfaults_snapshot_settings", default=None
)


class use_snapshots:
    """Make ``settings`` the snapshot settings in this context (the plugin, per test)."""

    def __init__(self, settings: SnapshotSettings | None) -> None:
        self._settings = settings
        self._token: object = None

    def __enter__(self) -> SnapshotSettings | None:
        self._token = _settings.set(self._settings)
        return self._settings

    def __exit__(self, *exc_info: object) -> None:
        _settings.reset(self._token)  # type: ignore[arg-type]


def normalise(trace: Trace) -> list[dict[str, Any]]:
    """The trace's events in a stable form: run ids renumbered, times rounded."""
    run_ids: dict[str, str] = {}

    def stable(run_id: str | None) -> str | None:
        if run_id is None:
            return None
        return run_ids.setdefault(run_id, f"run-{len(run_ids) + 1}")

    events = []
    for event in trace.events:
        data = event.model_dump(mode="json", exclude_none=True)
        data["run_id"] = stable(event.run_id)
        if event.parent_run_id is not None:
            data["parent_run_id"] = stable(event.parent_run_id)
        data["at"] = round(event.at, 6)
        events.append(data)
    return events


def assert_matches_snapshot(trace: Trace, path: str | Path) -> None:
    """Compare ``trace`` with the golden file at ``path`` (relative to the rootdir).

    A missing file, or ``--agentfaults-update-snapshots``, writes it instead.
    """
    settings = _settings.get() or SnapshotSettings()
    target = Path(path)
    if not target.is_absolute() and settings.root is not None:
        target = settings.root / target
    text = json.dumps({"events": normalise(trace)}, indent=2, sort_keys=True) + "\n"
    if settings.update or not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return
    expected = target.read_text(encoding="utf-8")
    if expected == text:
        return
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{target} (golden)",
            tofile="this run",
        )
    )
    raise AssertionError(
        f"trace does not match the golden trace {target}; if the change is intended, "
        f"rerun with --agentfaults-update-snapshots\n{diff}"
    )
