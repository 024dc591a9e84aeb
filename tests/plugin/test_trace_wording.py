"""Trace wording (issue 21, item 4): the recovery trace reads like a log a person scans."""

from __future__ import annotations

import json

from pytest_agentfaults.runtime.events import ErrorRecord, Event
from pytest_agentfaults.testing._trace_text import WIDTH
from pytest_agentfaults.testing.report import RetryCounts, count_retries

LONG = "reset " * 60

EXHAUSTED = f"""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError({LONG!r}), times=9)
def test_gives_up():
    agent = make(resilience=af.ResilienceConfig(max_retries=2))
    assert agent.run("go").output == "never"
"""


def _section(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "- recovery trace -" in line)
    end = next(
        i for i in range(start + 1, len(lines)) if lines[i].startswith(("agentfaults:", "="))
    )
    return lines[start + 1 : end]


def test_turns_clipped_lines_and_an_explicit_retries_exhausted_line(suite):
    pytester = suite(EXHAUSTED)
    result = pytester.runpytest("--agentfaults-trace-dir=out")
    result.assert_outcomes(failed=1)
    section = _section(result.stdout.str())
    assert all(len(line) <= WIDTH + 2 for line in section), max(section, key=len)
    text = "\n".join(section)
    assert "turn 1" in text
    assert "turn 2" in text
    assert "  fired 3 times: tool 'fetch' raises ConnectionError(" in text
    assert "summary: 3 faults fired, 2 tool retries, retries exhausted once" in text
    exhausted = [line for line in section if "retries exhausted:" in line]
    assert len(exhausted) == 1
    assert (
        "turn 1   tool.exhausted  [bot] retries exhausted: tool 'fetch' failed all 3 attempts"
        in exhausted[0]
    )
    assert LONG not in text  # clipped in the section ...
    (written,) = (pytester.path / "out").glob("*.json")
    errors = [
        e["error"]["message"] for e in json.loads(written.read_text())["events"] if "error" in e
    ]
    assert LONG in errors or LONG.strip() in errors  # ... and whole in the JSON


def test_first_attempts_carry_no_stray_attempt_numbers(suite):
    result = suite("""
def test_fails(trace):
    make().run("go")
    assert False
""").runpytest()
    section = _section(result.stdout.str())
    assert not [line for line in section if "attempt 1" in line]
    assert any("tool.call" in line and '[bot] fetch  {"url": "u"}' in line for line in section)


def test_plurals_in_the_summary_line(suite):
    result = suite('''
def test_one():
    def fixer(raw):
        raise af.EscalationError("no")
    @af.tool(on_error=af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    def boom() -> str:
        """Boom."""
        raise ValueError("x")
    af.Agent("b", model=ScriptedModel([call_tool("boom"), say("ok")]), tools=[boom]).run("x")
''').runpytest()
    result.stdout.fnmatch_lines(
        ["agentfaults: 0 faults injected, 0 retries, 1 fixer call, 1 escalation"]
    )
    assert "1 fixer calls" not in result.stdout.str()


HTTP_RETRIES = """
import httpx

@pytest.mark.inject_fault(http=503, times=2)
def test_sdk_style_retries(http_faults):
    http_faults.get("https://api.example.test/v1/models").respond(200, json={})
    with httpx.Client() as client:
        for attempt in range(3):
            response = client.get("https://api.example.test/v1/models")
            if response.status_code < 500:
                break
    assert response.status_code == 200
"""


def test_http_retries_are_counted_apart_from_tool_and_llm_retries(suite):
    pytester = suite(HTTP_RETRIES)
    result = pytester.runpytest("--agentfaults-trace=always")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*summary: 2 faults fired, 2 HTTP retries",
            "agentfaults: 2 faults injected, 0 retries, 2 HTTP retries, 0 fixer calls, *",
        ]
    )


def _request(status: int | None, *, url: str = "u", retry_count: int | None = None) -> Event:
    fields: dict[str, object] = {"method": "POST", "url": url}
    if retry_count is not None:
        fields["retry_count"] = retry_count
    return Event(type="http.request", run_id="http", status=status, **fields)


def test_count_retries_tells_the_layers_apart():
    events = [
        Event(type="tool.retry", tool="fetch"),
        Event(type="llm.retry"),
        Event(type="llm.retry"),
        _request(503),
        _request(503),  # the same request again, outside any run: an SDK's retry
        _request(200, url="other"),  # another route: not a retry
        _request(500, url="sdk", retry_count=0),
        _request(200, url="sdk", retry_count=1),  # the SDK says so
        Event(type="transport.retry"),  # the runtime's own HTTP retry
        Event(type="http.request", run_id="run-1", method="POST", url="u"),  # inside a run:
        Event(type="http.request", run_id="run-1", method="POST", url="u"),  # its events count
    ]
    assert count_retries(events) == RetryCounts(tool=1, llm=2, http=3)


def test_without_http_events_transport_retries_are_the_http_retries():
    error = ErrorRecord(type="ReadTimeout", message="", kind="timeout", retryable=True)
    events = [Event(type="transport.retry", error=error)] * 2
    assert count_retries(events) == RetryCounts(http=2)
