"""A regular expression compiled on its first use (`_redact`'s rules).

Light like ``plugin.py``: the standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LazyPattern", "Replacement"]

#: what a rule puts in place of a match: a string, or what a function makes of the match
Replacement = str | Callable[[re.Match[str]], str]


class LazyPattern:
    """A pattern compiled on its first use.

    Compiling every rule's pattern at import cost the plugin's start some 14 M
    instructions (~6 ms), and most sessions' text never reaches most rules: each runs only
    when its markers occur in the text.
    """

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        """The compiled pattern."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    def sub(self, replacement: Replacement, text: str) -> str:
        """`re.Pattern.sub`, compiled on the first call."""
        return self.get().sub(replacement, text)
