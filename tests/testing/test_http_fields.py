"""What http.request events record for the verdict: the client, x-should-retry, Retry-After."""

from __future__ import annotations

import email.utils
import importlib
import time

import pytest

from pytest_agentfaults.testing._http_fields import client_fields, request_headers, response_fields


@pytest.mark.parametrize(
    ("agent", "extra", "client"),
    [
        ("OpenAI/Python 3.54.0", {"x-stainless-retry-count": "0"}, "openai.OpenAI"),
        ("AsyncOpenAI/Python 3.54.0", {"x-stainless-lang": "python"}, "openai.AsyncOpenAI"),
        ("AzureOpenAI/Python 3.54.0", {"x-stainless-retry-count": "1"}, "openai.AzureOpenAI"),
        ("Anthropic/Python 2.12.0", {"x-stainless-retry-count": "0"}, "anthropic.Anthropic"),
        ("python-httpx/0.28.1", {}, "httpx"),
        ("python-httpx2/2.16.2", {}, "httpx2"),
        ("pytest-agentfaults/1.0", {}, "agentfaults"),
        ("curl/8.0", {}, "curl"),
    ],
)
def test_the_client_is_told_by_its_user_agent(agent, extra, client):
    assert client_fields({"user-agent": agent, **extra}) == {"client": client}


def test_an_sdk_with_a_custom_user_agent_is_told_by_its_retry_count_header():
    headers = {"user-agent": "my-app/1.0", "x-stainless-retry-count": "0"}
    anthropic = client_fields(headers, url="https://api.anthropic.com/v1/messages")
    assert anthropic == {"client": "anthropic"}
    assert client_fields(headers, url="https://x.test/v1/chat/completions") == {"client": "openai"}


def test_no_user_agent_records_nothing():
    assert client_fields({}) == {}


def test_retry_headers_of_a_failed_response():
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    fields = response_fields(429, [("Retry-After", date), ("X-Should-Retry", "false")])
    assert 28 <= fields["retry_after"] <= 30
    assert fields["retry_after_date"] is True
    assert fields["should_retry"] is False
    assert response_fields(503, [("retry-after-ms", "20")]) == {"retry_after": 0.02}
    assert response_fields(200, [("retry-after", "5")]) == {}


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_the_request_headers_an_event_reads_are_what_headers_get_gives(library: str) -> None:
    module = importlib.import_module(library)
    headers = module.Headers(
        [
            ("User-Agent", "OpenAI/Python 3.57.0"),
            ("X-Stainless-Lang", "python"),
            ("x-stainless-lang", "js"),  # repeated: joined as headers.get joins them
            ("Accept", "application/json"),
            ("x-stainless-retry-count", "é".encode()),  # not ascii
        ]
    )

    read = request_headers(headers)

    names = ("user-agent", "x-stainless-lang", "x-stainless-retry-count")
    assert read == {name: headers.get(name) for name in names}
    assert read["x-stainless-lang"] == "python, js"
    assert request_headers(module.Headers([("Accept", "*/*")])) == {}
