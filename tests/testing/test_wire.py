"""One home for provider formats and for broken JSON: every consumer says the same thing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import find

from pytest_agentfaults import fakes
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing import _malformed, _wire
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.server import LLMServer
from pytest_agentfaults.testing.steps import say


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- broken JSON


def test_fakes_and_strategies_share_one_malformed_vocabulary() -> None:
    assert fakes.MALFORMED_JSON_KINDS is _malformed.MALFORMED_JSON_KINDS
    assert afst.MALFORMED_JSON_KINDS is _malformed.MALFORMED_JSON_KINDS
    # the union of the two sets they had: each gained the other's kinds
    assert {"undefined", "unescaped_quote", "two_objects"} <= set(fakes.MALFORMED_JSON_KINDS)


@pytest.mark.parametrize("kind", _malformed.MALFORMED_JSON_KINDS)
def test_the_fakes_write_every_kind(kind: str) -> None:
    fake = fakes.faker_with_provider(seed=5)
    for _ in range(10):
        assert not parses(fake.malformed_json(kind))


@pytest.mark.parametrize("kind", _malformed.MALFORMED_JSON_KINDS)
def test_the_strategy_draws_every_kind(kind: str) -> None:
    text = find(afst.malformed_json(from_={"a": None, "b": ["c", 1]}, kinds=[kind]), bool)
    assert not parses(text)


@pytest.mark.parametrize("kind", _malformed.MALFORMED_JSON_KINDS)
def test_a_kind_reads_the_same_from_fakes_and_strategies(kind: str) -> None:
    # the fakes break their arguments payload the way the strategy breaks a document
    payload = {"query": "weather", "cursor": None}
    strategy = afst.malformed_json(from_=payload, kinds=[kind])
    # the simplest example: the kind's writing with the cut at its first place
    assert find(strategy, lambda text: True) == _malformed.break_json(kind, payload, cut=0)


def test_the_fakes_cut_a_truncation_in_its_second_half() -> None:
    fake = fakes.faker_with_provider(seed=11)
    for _ in range(20):
        text = fake.malformed_json("truncated")
        assert text.startswith("{")
        assert len(text) >= 8


# --------------------------------------------------------------------------- error bodies


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_fake_error_bodies_have_the_servers_shape_and_type(provider: str) -> None:
    fake = fakes.faker_with_provider(seed=2)
    compared = 0
    for status in (400, 401, 403, 404, 413, 429, 500, 503, 529):
        try:
            faked = json.loads(fake.provider_error_body(provider, status))
        except UsageError:
            continue  # a status this provider's fakes do not know
        compared += 1
        served = json.loads(_wire.error_body(provider, status))  # type: ignore[arg-type]
        if provider == "ollama":
            assert set(faked) == set(served) == {"error"}
        elif provider == "anthropic":
            assert faked["error"]["type"] == served["error"]["type"], status
            assert set(faked) - {"request_id"} == set(served)
        else:
            assert faked["error"]["type"] == served["error"]["type"], status
            assert list(faked["error"]) == list(served["error"])
    assert compared >= 4


def test_the_in_process_fault_and_the_server_send_the_same_error_body() -> None:
    plan = FaultPlan()
    plan.http(url="https://api.anthropic.com/v1/messages").status(529, retry_after=2)
    with plan.active():
        injected = httpx.post("https://api.anthropic.com/v1/messages", json={"model": "m"})
    with LLMServer() as server:
        served_plan = FaultPlan()
        served_plan.http().status(529, retry_after=2)
        server.bind(served_plan)
        server.script([say("never")], strict=False)
        served = httpx.post(f"{server.base_url('anthropic')}/v1/messages", json={"model": "m"})
    assert injected.status_code == served.status_code == 529
    # the first request id of each test: the server counts them per bound plan too
    expected = _wire.error_body("anthropic", 529, request_id="req_agentfaults000001")
    assert injected.content == served.content == expected
    for name in ("retry-after", "retry-after-ms", "request-id"):
        assert injected.headers[name] == served.headers[name]


RECORDED_ERRORS = sorted((Path(__file__).parents[2] / "fixtures" / "wire").glob("*/error_*.json"))


@pytest.mark.parametrize("path", RECORDED_ERRORS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_error_bodies_are_the_ones_providers_send(path: Path) -> None:
    # the recorded bodies the clients' tests read: the kit writes the same JSON
    recorded = json.loads(path.read_bytes())
    provider, status = path.parent.name, int(path.stem.removeprefix("error_"))
    message = recorded["error"] if provider == "ollama" else recorded["error"]["message"]
    assert _wire.error_payload(provider, status, message) == recorded  # type: ignore[arg-type]


# --------------------------------------------------------------------------- requests in


def test_model_name_reads_the_request_or_falls_back() -> None:
    assert _wire.model_name(b'{"model": "gpt-4o"}') == "gpt-4o"
    assert _wire.model_name(b'{"model": ') == "agentfaults"
    assert _wire.model_name(b"[1, 2]") == "agentfaults"
    assert _wire.model_name(b"") == "agentfaults"


# --------------------------------------------------------------------------- no circle


@pytest.mark.parametrize(
    ("imported", "absent"),
    [
        ("pytest_agentfaults.testing.http", "pytest_agentfaults.testing.server"),
        ("pytest_agentfaults.testing.server", "pytest_agentfaults.testing.http"),
    ],
)
def test_the_http_faults_and_the_server_do_not_import_each_other(
    imported: str, absent: str
) -> None:
    code = f"import sys, {imported}; print({absent!r} in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
