"""Scripts in files: the JSON / YAML format that `ScriptedModel.from_file` reads."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast, get_args

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._fail_steps import fail
from pytest_agentfaults.testing._malformed_steps import malformed
from pytest_agentfaults.testing.steps import (
    CallTool,
    CallTools,
    OnExhausted,
    Say,
    ScriptStep,
    ToolCallStep,
    call_tools,
    make_call_tool,
    say,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ON_EXHAUSTED", "Script", "read_script"]

ON_EXHAUSTED: Final = get_args(OnExhausted)
_ACTIONS: Final = ("call_tool", "call_tools", "fail", "malformed", "say")
_TOP_KEYS: Final = ("description", "name", "on_exhausted", "steps")
_SAY_USAGE: Final = (
    'a say step is the model\'s answer as text: {"say": "done"}, or the string "done" on its own'
)
_FAIL_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "connection": (),
    "http": ("status", "body", "retry_after"),
    "rate_limit": ("retry_after", "body"),
    "timeout": (),
}
_MALFORMED_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "blocked": ("finish_reason",),
    "empty": (),
    "not_json": ("text",),
    "tool_args": ("raw", "tool"),
    "truncated": (),
    "unknown_tool": ("name",),
}


@dataclass(frozen=True, slots=True)
class Script:
    steps: list[ScriptStep]
    name: str
    on_exhausted: OnExhausted = "raise"


@dataclass(slots=True)
class _ScriptReader:
    path: Path

    def error(self, where: str, problem: str) -> UsageError:
        return UsageError(f"script {self.path}: {where}: {problem}")

    def load(self) -> object:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read script {self.path}: {exc.strerror or exc}") from exc
        suffix = self.path.suffix.lower()
        if suffix == ".json":
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"script {self.path} is not valid JSON: {exc.msg} "
                    f"(line {exc.lineno}, column {exc.colno})"
                ) from exc
        if suffix in (".yaml", ".yml"):
            try:
                # lazy: PyYAML is an optional dependency, needed only for YAML scripts
                import yaml  # noqa: PLC0415
            except ImportError as exc:
                raise UsageError(
                    f"script {self.path} is YAML, which needs PyYAML: pip install pyyaml "
                    "(or pip install 'pytest-agentfaults[yaml]'), or write the script as JSON"
                ) from exc
            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise UsageError(f"script {self.path} is not valid YAML: {exc}") from exc
        raise UsageError(
            f"script {self.path}: unknown file type {suffix or '(none)'!r}; "
            "use .json, .yaml or .yml"
        )

    def script(self, data: object) -> Script:
        name = f"scripted:{self.path.stem}"
        on_exhausted: OnExhausted = "raise"
        if isinstance(data, list):
            entries: object = data
        elif isinstance(data, dict):
            self.check_keys(data, _TOP_KEYS, "top level")
            if "steps" not in data:
                raise self.error("top level", "no 'steps' list")
            entries = data["steps"]
            name = self.text(data, "name", "top level", default=name)
            value = data.get("on_exhausted", on_exhausted)
            if value not in ON_EXHAUSTED:
                raise self.error(
                    "on_exhausted",
                    f"{value!r}; use one of {', '.join(ON_EXHAUSTED)}{_guess(value, ON_EXHAUSTED)}",
                )
            on_exhausted = cast("OnExhausted", value)
        else:
            raise self.error(
                "top level", f"expected an object with 'steps' (or a list of steps), got {data!r}"
            )
        if not isinstance(entries, list):
            raise self.error("steps", f"must be a list, got {entries!r}")
        steps = [self.step(entry, f"steps[{index}]") for index, entry in enumerate(entries)]
        if on_exhausted == "repeat_last" and not steps:
            raise self.error(
                "steps", 'the list is empty, so on_exhausted="repeat_last" has nothing'
            )
        return Script(steps, name, on_exhausted)

    def check_keys(
        self, entry: Mapping[str, object], valid: tuple[str, ...], where: str, usage: str = ""
    ) -> None:
        for key in entry:
            if key not in valid:
                raise self.error(
                    where,
                    f"unknown key {key!r}; valid keys: {', '.join(sorted(valid))}"
                    f"{_guess(key, valid)}{'; ' + usage if usage else ''}",
                )

    def text(
        self, entry: Mapping[str, object], key: str, where: str, default: str | None = None
    ) -> str:
        value = entry.get(key, default)
        if not isinstance(value, str):
            raise self.error(where, f"{key!r} must be a string, got {value!r}")
        return value

    def step(self, entry: object, where: str) -> ScriptStep:
        if isinstance(entry, str):
            return Say(entry)
        if not isinstance(entry, dict):
            raise self.error(
                where, f'a step is an object such as {{"say": "hi"}} or a string, got {entry!r}'
            )
        actions = [key for key in _ACTIONS if key in entry]
        if len(actions) != 1:
            found = (
                f"has {' and '.join(map(repr, actions))}; one action per step"
                if actions
                else f"has no action key (keys: {', '.join(map(repr, entry)) or 'none'})"
            )
            guess = "" if actions else next(filter(None, (_guess(k, _ACTIONS) for k in entry)), "")
            raise self.error(where, f"{found}; the actions are: {', '.join(_ACTIONS)}{guess}")
        action = actions[0]
        try:
            if action == "say":
                return self.say(entry, where)
            if action == "call_tool":
                return self.call_tool(entry, where)
            if action == "call_tools":
                return self.call_tools(entry, where)
            if action == "fail":
                return self.fail(entry, where)
            return self.malformed(entry, where)
        except UsageError as exc:
            if str(exc).startswith(f"script {self.path}:"):
                raise
            raise self.error(where, str(exc)) from exc

    def say(self, entry: Mapping[str, object], where: str) -> ScriptStep:
        self.check_keys(entry, ("say",), where, _SAY_USAGE)
        text = entry["say"]
        if not isinstance(text, str):
            raise self.error(where, f"'say' must be a string, got {text!r}; {_SAY_USAGE}")
        return say(text)

    def call_tool(self, entry: Mapping[str, object], where: str) -> CallTool:
        self.check_keys(entry, ("call_tool", "args", "raw_args"), where)
        args = entry.get("args", {})
        if not isinstance(args, dict):
            raise self.error(where, f"'args' must be an object of arguments, got {args!r}")
        raw_args = entry.get("raw_args")
        if raw_args is not None and not isinstance(raw_args, str):
            raise self.error(
                where, f"'raw_args' must be a string (sent verbatim), got {raw_args!r}"
            )
        return make_call_tool(self.text(entry, "call_tool", where), raw_args, args)

    def call_tools(self, entry: Mapping[str, object], where: str) -> CallTools:
        self.check_keys(entry, ("call_tools",), where)
        items = entry["call_tools"]
        if not isinstance(items, list) or not items:
            raise self.error(where, f"'call_tools' must be a non-empty list, got {items!r}")
        calls: list[ToolCallStep] = []
        for index, item in enumerate(items):
            item_where = f"{where}.call_tools[{index}]"
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
                calls.append(make_call_tool(item[0], None, item[1]))
                continue
            step = self.step(item, item_where) if isinstance(item, dict) else None
            if not isinstance(step, ToolCallStep):
                raise self.error(
                    item_where,
                    f'{item!r} is not one tool call; use {{"call_tool": ...}}, '
                    '{"malformed": "tool_args" | "unknown_tool", ...} or a [name, {args}] pair',
                )
            calls.append(step)
        return call_tools(calls)

    def kind(
        self,
        entry: Mapping[str, object],
        action: str,
        options: Mapping[str, tuple[str, ...]],
        where: str,
    ) -> tuple[str, dict[str, Any]]:
        kind = entry[action]
        if not isinstance(kind, str) or kind not in options:
            raise self.error(
                where,
                f"unknown {action} kind {kind!r}; valid kinds: {', '.join(sorted(options))}"
                f"{_guess(kind, options)}",
            )
        self.check_keys(entry, (action, *options[kind]), where)
        return kind, {key: value for key, value in entry.items() if key != action}

    def fail(self, entry: Mapping[str, object], where: str) -> ScriptStep:
        if isinstance(entry["fail"], int) and not isinstance(entry["fail"], bool):
            self.check_keys(entry, ("fail", "body", "retry_after"), where)
            options: dict[str, Any] = {key: value for key, value in entry.items() if key != "fail"}
            return fail.http(entry["fail"], **options)
        kind, kwargs = self.kind(entry, "fail", _FAIL_OPTIONS, where)
        if kind == "http" and "status" not in kwargs:
            raise self.error(where, "a 'fail': 'http' step needs a 'status'")
        built: ScriptStep = getattr(fail, kind)(**kwargs)
        return built

    def malformed(self, entry: Mapping[str, object], where: str) -> ScriptStep:
        kind, kwargs = self.kind(entry, "malformed", _MALFORMED_OPTIONS, where)
        built: ScriptStep = getattr(malformed, kind)(**kwargs)
        return built


def _guess(word: object, options: Iterable[str]) -> str:
    """``; did you mean 'say'?`` for a misspelt ``word`` ('' when nothing is close)."""
    if not isinstance(word, str):
        return ""
    spelt = word.lower().replace("-", "_").replace(" ", "_")
    choices = list(options)
    close = [spelt] if spelt in choices else difflib.get_close_matches(spelt, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def read_script(path: Path) -> Script:
    reader = _ScriptReader(path)
    return reader.script(reader.load())
