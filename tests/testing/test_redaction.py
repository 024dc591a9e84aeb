"""Each boundary where text leaves the package redacts it (issue 14, item 1).

The boundaries: the recorder that makes events, a fault's description, the fault plan's
record of what fired and its "never fired" message, the errors this package raises, its
log records, and the per-test report writers (terminal section, trace JSON, HTML).
"""

from __future__ import annotations

import logging
import secrets

import httpx
import httpx2
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import call_tool, say
from pytest_agentfaults._redact import REDACTED, LearnedSecrets, redact_text
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import VirtualClock
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.session import TestState, write_html_report


@pytest.fixture
def key() -> str:
    return secrets.token_hex(20)


@pytest.fixture
def sk() -> str:
    return "sk-proj-" + secrets.token_urlsafe(24)


def test_the_recorder_redacts_every_text_field_extra_ones_included(key, sk):
    recorder = Recorder(agent="a", clock=VirtualClock())
    event = recorder.emit(
        "http.request", url=f"https://x.test/v1?key={key}", detail=sk, extra={"k": [sk]}
    )
    dumped = event.model_dump_json()
    assert key not in dumped
    assert sk[8:24] not in dumped
    assert event.field("url") == "https://x.test/v1?key=[REDACTED]"


def test_every_event_of_a_run_keeps_no_key_from_the_prompt_arguments_or_answers(key, sk):
    # The events every run records (run.start, llm.*, tool.*, run.end) take a path of their
    # own through the recorder; each text they carry comes from the user or the model.
    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return f"token={sk}"

    model = af.ScriptedModel(
        [call_tool("fetch", url=f"https://x.test/v1?key={key}"), say(f"done {sk}")]
    )
    agent = af.Agent("bot", model=model, tools=[fetch], clock=VirtualClock())
    result = agent.run(f"use api_key={key} and {sk}")
    assert [e.type for e in result.trace.events] == [
        "run.start",
        "llm.request",
        "llm.response",
        "tool.call",
        "tool.result",
        "llm.request",
        "llm.response",
        "run.end",
    ]
    dumped = result.trace.to_json()
    assert key not in dumped
    assert sk[8:24] not in dumped
    assert "[REDACTED]" in result.trace.events[3].field("detail")


def test_a_fault_description_is_redacted(key, sk):
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError(f"refused https://x.test/?key={key} {sk}"))
    plan.http(url=f"https://x.test/v1?key={key}").status(503)
    for fault in plan.faults:
        assert key not in fault.describe()
        assert key not in repr(fault)
        assert sk[8:24] not in fault.describe()


def test_a_fired_fault_keeps_no_key_in_its_name(key):
    plan = FaultPlan()
    plan.http().status(503)
    fired = plan.record(plan.faults[0], f"GET https://x.test/v1?key={key}", "503", 1)
    assert fired.name == "GET https://x.test/v1?key=[REDACTED]"
    assert plan.fired[0].name == fired.name


def test_the_never_fired_message_is_redacted(key):
    plan = FaultPlan()
    plan.http(url=f"https://x.test/v1?key={key}").status(503)
    with pytest.raises(AssertionError, match="never fired") as caught:
        plan.check()
    assert key not in str(caught.value)


def test_tool_execution_error_keeps_no_key_in_its_message(key, sk):
    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        raise ConnectionError(f"cannot reach {url}")

    agent = af.Agent(
        "bot",
        model=af.ScriptedModel([call_tool("fetch", url=f"https://x.test/?key={key}&t={sk}")]),
        tools=[fetch],
        clock=VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=1, strategy="none", on_exhaustion="raise"),
    )
    with pytest.raises(af.ToolExecutionError, match="failed after 2 attempt") as caught:
        agent.run("go")
    assert key not in str(caught.value)
    assert sk[8:24] not in str(caught.value)
    assert isinstance(caught.value.__cause__, ConnectionError)  # the cause is kept


def test_invalid_arguments_are_redacted_before_they_are_cut(sk):
    @af.tool
    def count(n: int) -> str:
        """Count."""
        return str(n)

    # the key straddles the 200-character cut of the message: 18 of its characters are in
    raw = '{"n": "' + "x" * 174 + " " + sk + '"}'
    with pytest.raises(af.InvalidArgsError) as caught:
        count.validate(raw)
    assert sk[:16] not in str(caught.value)
    assert caught.value.raw_arguments == raw  # the attribute keeps what the model sent


def test_the_package_log_redacts_query_keys(caplog, key):
    with caplog.at_level(logging.DEBUG, logger="pytest_agentfaults"):
        logging.getLogger("pytest_agentfaults").debug("GET %s", f"https://x.test/?key={key}")
    assert key not in caplog.text
    assert "GET https://x.test/?key=[REDACTED]" in caplog.text


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


def test_the_report_writers_show_no_key(tmp_path, key, sk):
    state = TestState("t.py::test_it", seed=1, real_time=False)
    state.plan.tool("fetch").raises(ConnectionError(f"refused https://x.test/?key={key} {sk}"))
    model = af.ScriptedModel([call_tool("fetch", url="u"), say("done")])
    state.start()
    try:
        af.Agent("bot", model=model, tools=[fetch]).run("go")
    finally:
        state.stop()
    assert len(state.plan.fired) == 1
    written = write_html_report(tmp_path / "r.html", [state.as_dict("passed")])
    for text in (state.render(), state.to_json("passed"), written.read_text()):
        assert "[REDACTED]" in text
        assert key not in text
        assert sk[8:24] not in text


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_the_http_layer_learns_the_credentials_each_request_carries(library, key):
    # httpx2 is the official SDKs' client: each request's credential headers and
    # credential query parameters are learned, to be redacted by value from then on
    plan = FaultPlan()
    plan.learned = learned = LearnedSecrets()
    plan.http().status(503).times(2)
    bearer, api_key = "gw_live_" + key, key[::-1]
    with plan.active(), library.Client() as client:
        client.get(f"https://x.test/v1?key={key}", headers={"Authorization": f"Bearer {bearer}"})
        client.get("https://x.test/v1", headers={"x-api-key": api_key})
    assert len(plan.fired) == 2
    shown = redact_text(f"{bearer} {api_key} {key}", learned)
    assert shown == f"{REDACTED} {REDACTED} {REDACTED}"


# The credential forms beyond Bearer, Basic, password and api_key: each through the
# boundaries above (the recorder, a fault's description, the errors raised, the package
# log, the report writers). ``{k}`` is a key of no shape any other rule knows.
FORMS = {
    "token-scheme": "Authorization: Token {k}",
    "apikey-scheme": "[('Authorization', 'ApiKey {k}')]",
    "passwd": "passwd={k}",
    "pwd": "pwd: {k}",
    "private_key": "private_key={k}",
    "PRIVATE_KEY": "PRIVATE_KEY={k}",
    "DB_PASSWD": "export DB_PASSWD={k}",
    "pwd-query": "https://x.test/login?pwd={k}",
    "pem": "-----BEGIN PRIVATE KEY-----\\n{k}\\n-----END PRIVATE KEY-----",
}


@pytest.fixture(params=FORMS.values(), ids=FORMS.keys())
def form(request, key) -> tuple[str, str]:
    """A text holding a credential in one of `FORMS`, and the credential."""
    secret = "gw" + key[:6] + "Q" + key[6:]  # letters and digits: a key's shape
    return request.param.format(k=secret), secret


def test_each_credential_form_is_redacted_at_every_boundary(form, caplog, tmp_path):
    text, secret = form
    recorder = Recorder(agent="a", clock=VirtualClock())
    event = recorder.emit("tool.error", detail=f"failed: {text}", extra={"k": [text]})
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError(f"refused {text}"))
    with caplog.at_level(logging.DEBUG, logger="pytest_agentfaults"):
        logging.getLogger("pytest_agentfaults").debug("sent %s", text)
    shown = {
        "event": event.model_dump_json(),
        "fault": plan.faults[0].describe() + repr(plan.faults[0]),
        "log": caplog.text,
    }
    for where, out in shown.items():
        assert secret not in out, where
        assert REDACTED in out, where


def test_each_credential_form_is_redacted_from_a_tool_error_and_the_reports(form, tmp_path):
    text, secret = form

    @af.tool
    def login(account: str) -> str:
        """Log in."""
        raise ConnectionError(f"cannot log in with {text}")

    state = TestState("t.py::test_it", seed=1, real_time=False)
    state.plan.tool("fetch").raises(ConnectionError(f"refused {text}"))
    steps = [call_tool("fetch", url="u"), call_tool("login", account="a"), say("done")]
    agent = af.Agent("bot", model=af.ScriptedModel(steps), tools=[fetch, login])
    state.start()
    try:
        result = agent.run("go")
    finally:
        state.stop()
    assert len(state.plan.fired) == 1
    written = write_html_report(tmp_path / "r.html", [state.as_dict("passed")])
    outputs = [result.trace.to_json(), state.render(), state.to_json("passed"), written.read_text()]
    for out in outputs:
        assert secret not in out
        assert REDACTED in out
