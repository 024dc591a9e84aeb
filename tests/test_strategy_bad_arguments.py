"""Strategies given arguments they cannot use say so at once, naming the argument."""

from __future__ import annotations

import typing
from typing import Any, Optional

import pytest
import typing_extensions
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, DirectoryPath, FilePath, NewPath

import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.fakes import fake_args

QUICK = settings(max_examples=20, deadline=None, database=None)


def draw_from(strategy: st.SearchStrategy[Any]) -> None:
    @QUICK
    @given(strategy)
    def check(value: Any) -> None:
        pass

    check()


# ------------------------------------------------------------------ fixed values: at build time

BAD_FIXED = [
    ({"base_delay": 5.0, "max_delay": 1.0}, r"base_delay=5.0, max_delay=1.0.*max_delay"),
    ({"max_retries": -1}, r"resilience_configs\(max_retries=-1\).*max_retries"),
    ({"base_delay": -1.0}, r"resilience_configs\(base_delay=-1.0\).*base_delay"),
    ({"max_delay": -2.0}, r"resilience_configs\(max_delay=-2.0\).*max_delay"),
    ({"jitter_factor": 2.0}, r"resilience_configs\(jitter_factor=2.0\).*jitter_factor"),
    ({"timeout_seconds": -1.0}, r"resilience_configs\(timeout_seconds=-1.0\).*timeout_seconds"),
    ({"strategy": "bogus"}, r"resilience_configs\(strategy='bogus'\).*strategy"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_FIXED)
def test_resilience_configs_refuse_bad_fixed_values_when_built(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(af.UsageError, match=f"(?s){message}"):
        afst.resilience_configs(**kwargs)


def test_a_fixed_base_delay_above_the_default_cap_is_fine() -> None:
    draw_from(afst.resilience_configs(base_delay=100.0))


# ------------------------------------------------------------------ strategies: at draw time


def test_strategies_whose_delays_never_fit_say_so_not_a_health_check() -> None:
    strategy = afst.resilience_configs(base_delay=st.floats(10, 20), max_delay=st.floats(0, 1))
    with pytest.raises(af.UsageError, match=r"resilience_configs\(base_delay=.*max_delay="):
        draw_from(strategy)


def test_a_fixed_cap_below_every_drawn_base_says_so() -> None:
    strategy = afst.resilience_configs(base_delay=st.floats(10, 20), max_delay=1.0)
    with pytest.raises(af.UsageError, match=r"max_delay"):
        draw_from(strategy)


def test_a_strategy_drawing_negatives_names_the_argument() -> None:
    strategy = afst.resilience_configs(max_retries=st.integers(-5, -1))
    with pytest.raises(
        af.UsageError, match=r"(?s)resilience_configs\(max_retries=.*\).*max_retries"
    ):
        draw_from(strategy)


def test_overlapping_delay_strategies_still_draw() -> None:
    draw_from(afst.resilience_configs(base_delay=st.floats(0, 10), max_delay=st.floats(0, 10)))


# ------------------------------------------------------------------ tools fake_args cannot fill


class Upload(BaseModel):
    source: FilePath
    note: str = ""


@af.tool
def read_file(path: FilePath, limit: int = 10) -> str:
    """Read a file."""
    return str(path)


@af.tool
def list_dir(folder: DirectoryPath) -> str:
    """List a directory."""
    return str(folder)


@af.tool
def save(target: NewPath, text: str) -> str:
    """Save text to a new file."""
    return str(target)


@af.tool
def upload(item: Upload) -> str:
    """Upload a file."""
    return str(item.source)


@af.tool
def tail(lines: int, path: FilePath | None = None) -> str:
    """Tail a file, if given."""
    return str(lines)


@pytest.mark.parametrize(
    ("tool", "parameter", "kind"),
    [
        (read_file, "path", "FilePath"),
        (list_dir, "folder", "DirectoryPath"),
        (save, "target", "NewPath"),
        (upload, "item.source", "FilePath"),
    ],
)
def test_scripts_refuse_a_tool_whose_argument_cannot_be_faked_when_built(
    tool: af.Tool, parameter: str, kind: str
) -> None:
    with pytest.raises(af.UsageError) as info:
        afst.scripts(tools=[tool])
    message = str(info.value)
    for words in (f"'{tool.name}'", f"'{parameter}'", kind, "pass the argument explicitly"):
        assert words in message, message
    with pytest.raises(af.UsageError, match="pass the argument explicitly"):
        fake_args(tool, seed=1)


#: A type alias: ``type Source = FilePath`` makes a ``typing.TypeAliasType`` (Python 3.12+,
#: so that class is not there to test on 3.11); typing_extensions' works on every Python.
ALIASES = [typing_extensions.TypeAliasType, *filter(None, [getattr(typing, "TypeAliasType", None)])]


@pytest.mark.parametrize("alias", ALIASES)
def test_a_path_behind_a_type_alias_cannot_be_faked_either(alias: Any) -> None:
    # Behind an alias the path went unseen: fake_args made up paths, all refused, and
    # failed after 25 tries instead of asking for the argument; an optional one was faked.
    source = alias("Source", FilePath)

    class Upload(BaseModel):
        source: source

    def read(path: source) -> str:
        """Read a file."""
        return str(path)

    def send(item: Upload) -> str:
        """Upload a file."""
        return str(item.source)

    def tail(lines: int, path: Optional[source] = None) -> str:  # noqa: UP045
        """Tail a file, if given."""
        return str(lines)

    for function, parameter in ((read, "'path'"), (send, "'item.source'")):
        with pytest.raises(af.UsageError, match="pass the argument explicitly") as info:
            fake_args(af.tool(function), seed=1)
        assert f"{parameter} is a FilePath" in str(info.value)
    assert set(fake_args(af.tool(tail), seed=1)) == {"lines"}


def test_an_optional_parameter_that_cannot_be_faked_is_left_out() -> None:
    for seed in range(10):
        args = fake_args(tail, seed=seed)
        assert set(args) == {"lines"}
        tail.validate(args)
    draw_from(afst.scripts(tools=[tail]))
