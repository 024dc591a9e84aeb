"""Redact what pytest shows of a test: its failure text and its captured output.

A test report is where every terminal line, ``-rA`` summary and junit XML record about a
test comes from: the traceback (with ``-l``, the locals of every frame), the chained
causes, the captured stdout, stderr and log records. The plugin passes each report through
`scrub_report` once, so a key in any of them (an SDK's log line with ``?key=``, a tool
error that quotes its arguments) is redacted at that one boundary. Log records that
bypass reports (live logging, ``--log-file``) are redacted by their handlers' formatter
(`redact_log_output`).

Both take the session's `LearnedSecrets`: a key of no known shape that the kit saw in a
request is redacted by value, in the report of the test that sent it and every later one.
The report of a test that does not use the kit gets only that and the provider key shapes
(`redact_shapes`): no rule that reads context, so its failure reads as without the plugin.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_agentfaults._redact import REDACTED, LearnedSecrets, redact_shapes, redact_text

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["redact_log_output", "redact_trace_files", "redact_xml", "scrub_report"]

# pytest's logging plugin writes these handlers straight to the terminal or a file
_DIRECT_HANDLERS = ("log_cli_handler", "log_file_handler")


def scrub_report(report: Any, learned: LearnedSecrets | None = None, *, kit: bool = True) -> None:
    """Redact ``report``'s ``longrepr``, ``sections``, ``user_properties`` and xfail reason.

    With ``learned`` (the session's), every value it holds too. ``kit``: the report is of
    a test that uses the kit (`redact_text`); else only `redact_shapes` (no rule reading
    the context: a plain test's report reads as without the plugin). A warning's report
    (pytest's ``WarningReport``) has its ``message`` redacted.
    """
    redact: Callable[[str, LearnedSecrets | None], str] = redact_text if kit else redact_shapes
    if learned:
        redact = _and_cut_keys(redact)
    longrepr = getattr(report, "longrepr", None)
    if longrepr is not None:
        report.longrepr = _scrub(longrepr, set(), learned, redact)
    sections = getattr(report, "sections", None)
    if sections:
        report.sections = [(title, redact(text, learned)) for title, text in sections]
    properties = getattr(report, "user_properties", None)
    if properties:  # record_property(): junit XML writes str() of each value
        report.user_properties = [
            (name, _property(value, learned, redact)) for name, value in properties
        ]
    message = getattr(report, "message", None)
    if isinstance(message, str) and not hasattr(report, "longrepr"):
        report.message = redact(message, learned)
    reason = getattr(report, "wasxfail", None)
    if isinstance(reason, str) and reason:  # the XFAIL / XPASS line's and junit's reason
        report.wasxfail = redact(reason, learned)


def _property(
    value: Any, learned: LearnedSecrets | None, redact: Callable[[str, LearnedSecrets | None], str]
) -> Any:
    if isinstance(value, str):
        return redact(value, learned)
    if value is None or isinstance(value, int | float):
        return value
    text = str(value)  # what junit XML writes of it
    redacted = redact(text, learned)
    return value if redacted == text else redacted


#: the shortest part of a learned key redacted where pytest cut the key short (`_cut_keys`)
_CUT_SHORTEST = 4
#: what was cut short is a key's, not a word's, if its parts hold a digit or are this long
_CUT_WORDS_SHORTER = 12


def _and_cut_keys(
    redact: Callable[[str, LearnedSecrets | None], str],
) -> Callable[[str, LearnedSecrets | None], str]:
    def redact_and_cut(text: str, learned: LearnedSecrets | None) -> str:
        text = redact(text, learned)
        return _cut_keys(text, learned) if learned and "..." in text else text

    return redact_and_cut


def _cut_keys(text: str, learned: LearnedSecrets) -> str:
    """Redact the parts of a learned key that pytest cut short, on each side of ``...``.

    pytest shows a long value (a local with ``-l``, an assertion's operand) as its start
    and its end around ``...``: a key across the cut is whole on neither side, so no value
    matches. The longest start of a key that ends the text before ``...`` goes, and the
    longest end of a key that starts the text after it, if what they show of the key
    together is a key's: it holds a digit or is 12 characters long. A key that starts or
    ends with a word (``agent...``) would otherwise redact that word wherever pytest cut
    an unrelated text after it.
    """
    parts = text.split("...")
    for i in range(len(parts) - 1):
        for value in learned.values:
            before, after = parts[i], parts[i + 1]
            start = _longest_start(value, before)
            end = _longest_end(value, after)
            shown = value[:start] + value[len(value) - end :]
            if len(shown) < _CUT_WORDS_SHORTER and not any(c.isdigit() for c in shown):
                continue
            if start:
                parts[i] = before[:-start] + REDACTED
            if end:
                parts[i + 1] = REDACTED + after[end:]
    return "...".join(parts)


def _longest_start(value: str, before: str) -> int:
    """The size of the longest start of ``value`` that ends ``before``, or 0.

    Shorter than ``value`` (a whole value was replaced already), at least `_CUT_SHORTEST`.
    """
    for size in range(min(len(value) - 1, len(before)), _CUT_SHORTEST - 1, -1):
        if before.endswith(value[:size]):
            return size
    return 0


def _longest_end(value: str, after: str) -> int:
    """The size of the longest end of ``value`` that starts ``after``, as `_longest_start`."""
    for size in range(min(len(value) - 1, len(after)), _CUT_SHORTEST - 1, -1):
        if after.startswith(value[-size:]):
            return size
    return 0


def redact_xml(element: Any, learned: LearnedSecrets | None = None) -> None:
    """Redact the text, tail and attribute values of ``element`` and all inside it.

    ``element`` is an ``xml.etree.ElementTree.Element`` (pytest's junit XML records). At
    the session's end, for keys learned after a report was made: the values learned and
    the key shapes only (`redact_shapes`); the rules reading context ran on each kit
    test's report as it was made, and a plain test's report must keep its text.
    """
    for node in element.iter():
        if node.text:
            node.text = redact_shapes(node.text, learned)
        if node.tail:
            node.tail = redact_shapes(node.tail, learned)
        for name, value in node.attrib.items():
            node.attrib[name] = redact_shapes(value, learned)


def _scrub(
    value: Any,
    seen: set[int],
    learned: LearnedSecrets | None,
    redact: Callable[[str, LearnedSecrets | None], str] = redact_text,
) -> Any:
    """``value`` with every string in it redacted; pytest's repr objects are edited in place.

    pytest keeps a failure as dataclasses (``ExceptionChainRepr``, ``ReprEntry``,
    ``ReprLocals``, ``ReprFileLocation`` ...) holding strings, lists and tuples.
    """
    if isinstance(value, str):
        return redact(value, learned)
    if isinstance(value, list):
        return [_scrub(item, seen, learned, redact) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item, seen, learned, redact) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if id(value) in seen:  # a chain shares its last traceback with the top level
            return value
        seen.add(id(value))
        # its fields, and what a subclass sets in __init__: pytest's `TerminalRepr` is a
        # dataclass with no field, and a collection error's repr (the module's traceback
        # as text) and a missing fixture's (the test's decorators) keep theirs so
        names = {field.name for field in dataclasses.fields(value)}
        names.update(getattr(value, "__dict__", ()))
        for name in names:
            current = getattr(value, name, None)
            cleaned = _scrub(current, seen, learned, redact)
            if cleaned is not current:
                object.__setattr__(value, name, cleaned)
    return value


class _RedactingFormatter(logging.Formatter):
    """Formats with pytest's own formatter, then redacts the line (the record is untouched).

    With the session's ``learned`` credentials: those learned by the time a line is written.
    ``kit`` says whether the line is written where the kit is in use (see `scrub_report`).
    """

    def __init__(
        self,
        inner: logging.Formatter,
        learned: LearnedSecrets | None,
        kit: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.learned = learned
        self.kit = kit

    def format(self, record: logging.LogRecord) -> str:
        if self.kit is None or self.kit():
            return redact_text(self.inner.format(record), self.learned)
        return redact_shapes(self.inner.format(record), self.learned)


def redact_log_output(
    logging_plugin: object,
    learned: LearnedSecrets | None = None,
    kit: Callable[[], bool] | None = None,
) -> None:
    """Make pytest's live-log and log-file handlers redact what they write.

    With ``learned`` (the session's), every value it holds too. ``kit``: whether the kit
    is in use where a line is written (None: everywhere); if not, only `redact_shapes`.
    """
    for name in _DIRECT_HANDLERS:
        handler = getattr(logging_plugin, name, None)
        formatter = getattr(handler, "formatter", None)
        if (
            isinstance(handler, logging.Handler)
            and isinstance(formatter, logging.Formatter)
            and not isinstance(formatter, _RedactingFormatter)
        ):
            handler.setFormatter(_RedactingFormatter(formatter, learned, kit))


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")  # as in a trace file's name (`trace_file_name`)


def redact_trace_files(directory: Path, learned: LearnedSecrets) -> None:
    """Redact the trace files in ``directory``, their names too, with ``learned``.

    At the session's end under xdist: a worker writes its tests' files knowing only the
    keys it learned itself.
    """
    if not directory.is_dir():
        return
    for path in directory.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        redacted = redact_text(text, learned)
        if redacted != text:
            path.write_text(redacted, encoding="utf-8")
        name = _UNSAFE.sub("_", redact_text(path.name, learned))
        if name != path.name:
            path.replace(path.with_name(name))
