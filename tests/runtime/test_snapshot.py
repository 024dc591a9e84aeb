"""The stored form of golden traces, outside the plugin: old files, ports, call ids, errors."""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.backoff import seeded_jitter
from pytest_agentfaults.runtime.events import Event, Trace
from pytest_agentfaults.runtime.snapshot import SnapshotSettings, normalise, use_snapshots


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    raise ConnectionError("reset")


def _jittered_trace(seed: int) -> Trace:
    """A run with a jittered retry; every seed gives other delays."""
    model = af.ScriptedModel([af.call_tool("fetch", url="u"), af.say("done")])
    agent = af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=1),
    )
    with seeded_jitter(seed):
        return agent.run("go").trace


def _old_format(trace: Trace) -> str:
    """A golden file as the first version wrote it: times and delays, no "format" key."""
    events = []
    for event in trace.events:
        data = event.model_dump(mode="json", exclude_none=True)
        data["run_id"] = "run-1"
        data["at"] = round(event.at, 6)
        events.append(data)
    return json.dumps({"events": events}, indent=2, sort_keys=True) + "\n"


@pytest.fixture(autouse=True)
def _settings():
    # Whatever options run this suite (--agentfaults-update-snapshots too): compare here.
    with use_snapshots(SnapshotSettings()):
        yield


def test_an_old_format_file_is_read_in_the_seed_free_form(tmp_path):
    golden = tmp_path / "old.json"
    golden.write_text(_old_format(_jittered_trace(seed=1)))
    later = _jittered_trace(seed=2)
    assert later.delays() != _jittered_trace(seed=1).delays()
    later.assert_matches_snapshot(golden)  # the seed changed: still a match
    # Asked for exact times, the old file's times count: only its own seed matches.
    _jittered_trace(seed=1).assert_matches_snapshot(golden, exact_times=True)
    with pytest.raises(AssertionError, match="older format") as caught:
        later.assert_matches_snapshot(golden, exact_times=True)
    assert '"delay": ' in str(caught.value)


def test_an_old_format_mismatch_says_the_file_is_old_and_how_to_rewrite_it(tmp_path):
    golden = tmp_path / "old.json"
    golden.write_text(_old_format(_jittered_trace(seed=1)).replace('"go"', '"stop"'))
    with pytest.raises(AssertionError) as caught:
        _jittered_trace(seed=1).assert_matches_snapshot(golden)
    message = str(caught.value)
    assert "the file is in an older format (it stored times and delays)" in message
    assert "rewrite it: pytest --agentfaults-update-snapshots" in message
    assert '-      "detail": "stop",' in message
    assert '+      "detail": "go",' in message


def test_a_hand_written_file_without_times_is_not_called_an_older_format(tmp_path):
    # A golden file the user wrote by hand: no "format" key, and no times or delays in it.
    golden = tmp_path / "hand.json"
    golden.write_text('{"events": []}\n')
    with pytest.raises(AssertionError) as caught:
        _jittered_trace(seed=1).assert_matches_snapshot(golden)
    message = str(caught.value)
    assert "older format" not in message
    assert "stored times and delays" not in message
    assert 'has no "format" key: it was not written by assert_matches_snapshot()' in message
    assert "rewrite it: pytest --agentfaults-update-snapshots" in message


def test_the_seed_free_form_keeps_outcomes_and_drops_times_ports_and_call_ids():
    trace = Trace(
        [
            Event(type="run.start", run_id="run-77", at=0.0),
            Event(type="tool.call", seq=1, run_id="run-77", tool="t", call_id="call_913", at=1.5),
            Event(
                type="transport.retry",
                seq=2,
                run_id="run-77",
                attempt=1,
                max_attempts=3,
                delay=1.2345,
                detail="openai: HTTP 503; waiting 1.2345s (backoff) before attempt 2/3",
                url="http://127.0.0.1:50123/v1/chat/completions",
                at=2.0,
            ),
        ]
    )
    seed_free = normalise(trace)
    assert seed_free == [
        {"type": "run.start", "seq": 0, "run_id": "run-1", "agent": ""},
        {
            "type": "tool.call",
            "seq": 1,
            "run_id": "run-1",
            "agent": "",
            "tool": "t",
            "call_id": "call-1",
        },
        {
            "type": "transport.retry",
            "seq": 2,
            "run_id": "run-1",
            "agent": "",
            "attempt": 1,
            "max_attempts": 3,
            "waited": True,
            "detail": "openai: HTTP 503; waiting <wait> (backoff) before attempt 2/3",
            "url": "http://127.0.0.1:<port>/v1/chat/completions",
        },
    ]
    exact = normalise(trace, exact_times=True)
    assert [e["at"] for e in exact] == [0.0, 1.5, 2.0]
    assert exact[2]["delay"] == 1.2345


@pytest.mark.parametrize(
    ("text", "complaint"),
    [("{not json", "is not valid JSON"), ('{"runs": []}', 'has no "events" list')],
)
def test_a_broken_golden_file_is_a_usage_error_naming_it(tmp_path, text, complaint):
    golden = tmp_path / "broken.json"
    golden.write_text(text)
    with pytest.raises(UsageError, match=complaint) as caught:
        Trace().assert_matches_snapshot(golden)
    assert str(golden) in str(caught.value)
    assert "--agentfaults-update-snapshots" in str(caught.value)


def test_without_the_plugin_a_missing_file_is_written_relative_to_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with use_snapshots(None):
        _jittered_trace(seed=1).assert_matches_snapshot("golden/run.json")
    document = json.loads((tmp_path / "golden" / "run.json").read_text())
    assert (document["format"], document["times"]) == (2, "none")
