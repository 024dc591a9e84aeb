"""The verdict judges google-genai by google-genai's own retry rules, and says so.

As read in the installed ``google/genai/_api_client.py`` (``retry_args``): a
``genai.Client`` retries nothing unless it is given ``HttpOptions(retry_options=...)``;
then it retries 408, 429, 500, 502, 503 and 504, timeouts and failed connects, with
tenacity's exponential backoff (1 s, doubling, plus up to 1 s of jitter), never reading
``Retry-After``. It raises ``json.JSONDecodeError`` on a 2xx body that is not JSON (an
HTML page included), where the openai SDK hands the page back as a ``str``.
"""

from __future__ import annotations

import json

import pytest

from pytest_agentfaults.testing import say

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

MODEL = "gemini-2.0-flash"


def client(attempts: int | None = None):
    retry = None if attempts is None else types.HttpRetryOptions(attempts=attempts)
    return genai.Client(
        api_key="gemini-test-key", http_options=types.HttpOptions(retry_options=retry)
    )


@pytest.mark.inject_fault(http=503)
def test_a_client_without_retry_options_gives_up_and_the_advice_names_them(trace):
    with client() as made, pytest.raises(errors.ServerError):
        made.models.generate_content(model=MODEL, contents="hi")
    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early"
    assert "the google-genai SDK (genai.Client)" in found.message
    assert "retry_options=types.HttpRetryOptions(attempts=3)" in found.advice
    assert "max_retries" not in found.advice  # google-genai has no such setting


@pytest.mark.parametrize("kind", ["malformed_body", "not_json"])
def test_a_body_that_is_not_json_raises_in_genai_and_giving_up_is_the_finding(faults, trace, kind):
    getattr(faults.http(), kind)()
    with client() as made, pytest.raises(json.JSONDecodeError):
        made.models.generate_content(model=MODEL, contents="hi")
    (found,) = trace.verdict().findings
    # nothing was used: google-genai raised, so the finding is the giving up
    assert found.code == "gave_up_early"
    assert "raised json.JSONDecodeError" in found.message
    assert "catch json.JSONDecodeError" in found.advice


@pytest.mark.inject_fault(http="quota", retry_after=5)
def test_retry_options_that_ignore_retry_after_are_caught_with_genai_advice(
    http_faults, trace, virtual_clock
):
    http_faults.script("gemini", [say("Bonjour.")])
    with client(attempts=3) as made:
        made.models.generate_content(model=MODEL, contents="hi")
    assert virtual_clock.sleeps[0] < 5  # tenacity's backoff, not the server's 5 s
    (found,) = trace.verdict().findings
    assert found.code == "retry_after_ignored"
    assert "initial_delay" in found.advice


@pytest.mark.inject_fault(http=501)
def test_a_status_its_retry_options_do_not_retry_is_its_policy(trace):
    with client(attempts=3) as made, pytest.raises(errors.ServerError):
        made.models.generate_content(model=MODEL, contents="hi")
    assert len(trace.of("http.request")) == 1
    assert trace.verdict().passed


@pytest.mark.inject_fault(http=503, times=2)
def test_retry_options_riding_out_two_503s_pass(http_faults, trace, virtual_clock):
    http_faults.script("gemini", [say("Bonjour.")])
    with client(attempts=3) as made:
        assert made.models.generate_content(model=MODEL, contents="hi").text == "Bonjour."
    assert len(virtual_clock.sleeps) == 2
    trace.assert_resilient()


def test_a_cut_stream_never_asked_again_gets_genai_stream_advice(faults, http_faults, trace):
    faults.http().truncated_stream(after=1)
    http_faults.script("gemini", [say("Bonjour tout le monde.")], strict=False)
    http_faults.assert_all_called = False
    httpx2 = pytest.importorskip("httpx2")
    with client(attempts=3) as made, pytest.raises(httpx2.RemoteProtocolError):
        list(made.models.generate_content_stream(model=MODEL, contents="hi"))
    (found,) = trace.verdict().findings
    assert (found.code, "cut mid-way" in found.message) == ("gave_up_early", True)
    assert "generate_content_stream" in found.advice
