"""pydantic-ai: placeholder, filled in below (see install)."""

from __future__ import annotations

from collections.abc import Callable


def install() -> Callable[[], None]:
    """Patch pydantic-ai's tool path; returns the undo."""
    return lambda: None
