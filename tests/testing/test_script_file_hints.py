"""Script files: a misspelt key or kind gets a "did you mean", and a bad say step its usage."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing.scripted import ScriptedModel

MISSPELT = [
    ('{"steps": [{"sey": "hi"}]}', r"steps\[0\]: has no action key .*; did you mean 'say'\?"),
    ('{"steps": [{"call_tol": "f"}]}', r"did you mean 'call_tool'\?"),
    ('{"steps": [{"call_tool": "f", "arg": {}}]}', r"unknown key 'arg';.*did you mean 'args'\?"),
    ('{"steps": [{"fail": "timout"}]}', r"unknown fail kind 'timout';.*did you mean 'timeout'\?"),
    (
        '{"steps": [{"malformed": "not-json"}]}',
        r"unknown malformed kind 'not-json';.*did you mean 'not_json'\?",
    ),
    ('{"step": []}', r"top level: unknown key 'step';.*did you mean 'steps'\?"),
    ('{"steps": [], "on_exhausted": "rase"}', r"on_exhausted: 'rase';.*did you mean 'raise'\?"),
    (
        '{"steps": [{"fail": "rate_limit", "retry_afer": 2}]}',
        r"unknown key 'retry_afer';.*did you mean 'retry_after'\?",
    ),
]


def write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "script.json"
    path.write_text(content)
    return path


@pytest.mark.parametrize(("content", "expected"), MISSPELT)
def test_a_misspelt_key_or_kind_gets_a_suggestion(
    tmp_path: Path, content: str, expected: str
) -> None:
    with pytest.raises(UsageError, match=expected) as info:
        ScriptedModel.from_file(write(tmp_path, content))
    listed = ("valid ", "use one of", "the actions are")
    assert any(words in str(info.value) for words in listed)  # the full list stays


def test_nothing_close_gets_no_suggestion(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        ScriptedModel.from_file(write(tmp_path, '{"steps": [{"zzzz": 1}]}'))
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    "step",
    ['{"say": 3}', '{"say": {"text": "hi"}}', '{"say": ["a", "b"]}', '{"say": "hi", "to": "x"}'],
)
def test_a_bad_say_step_shows_how_a_say_step_is_written(tmp_path: Path, step: str) -> None:
    with pytest.raises(UsageError, match=r"steps\[0\]: ") as info:
        ScriptedModel.from_file(write(tmp_path, f'{{"steps": [{step}]}}'))
    assert '{"say": "done"}' in str(info.value)
    assert 'the string "done"' in str(info.value)
