"""Request ids, Anthropic's tool_use ids and error types, a quota's default wait: the wire units.

The SDK-level behaviour is in ``tests/sdk/test_wire_fidelity.py``; these pin the pieces.
"""

from __future__ import annotations

import json

import pytest

from pytest_agentfaults.testing import _wire
from pytest_agentfaults.testing._wire import (
    RequestIds,
    kind_served,
    model_request,
    request_ids,
    status_served,
)
from pytest_agentfaults.testing._wire._base import from_tool_use_id, tool_use_id
from pytest_agentfaults.testing.faults import FaultPlan

PROVIDERS = ["openai", "openai-responses", "anthropic", "ollama", "gemini"]
HEADER = {"openai": "x-request-id", "openai-responses": "x-request-id", "anthropic": "request-id"}


def test_each_plan_counts_its_own_ids_and_keeps_them():
    first, second = FaultPlan(), FaultPlan()
    assert request_ids(first) is request_ids(first)
    assert [request_ids(first)(), request_ids(first)()] == [
        "req_agentfaults000001",
        "req_agentfaults000002",
    ]
    assert request_ids(second)() == "req_agentfaults000001"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_injected_status_carries_the_providers_request_id(provider):
    served = status_served(provider, 503, ids=RequestIds())
    headers = dict(served.headers)
    payload = json.loads(b"".join(served.chunks))
    if provider in HEADER:
        assert headers[HEADER[provider]] == "req_agentfaults000001"
    else:  # Gemini and Ollama send none
        assert not {"x-request-id", "request-id"} & set(headers)
    assert ("request_id" in payload) == (provider == "anthropic")


def test_without_ids_a_status_draws_from_the_current_test():
    plan = FaultPlan()
    with plan.active():
        served = status_served("openai", 500)
    assert dict(served.headers)["x-request-id"] == "req_agentfaults000001"
    assert request_ids(plan)() == "req_agentfaults000002"


def test_only_what_the_provider_answers_uses_up_an_id():
    ids = RequestIds()
    for kind in ("not_json", "proxy_html"):  # a proxy's answer: no id
        served = kind_served(kind, "anthropic", stream=False, model="m", ids=ids)
        assert "request-id" not in dict(served.headers)
    shown = []
    for kind in ("context_length", "quota", "stall", "truncated_stream"):
        served = kind_served(kind, "anthropic", stream=True, model="m", ids=ids)
        shown.append(dict(served.headers)["request-id"])
    assert shown == [f"req_agentfaults00000{n}" for n in (1, 2, 3, 4)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_quota_without_retry_after_asks_for_one_second_everywhere(provider):
    served = kind_served("quota", provider, stream=False, model="m", ids=RequestIds())
    headers = dict(served.headers)
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("1", "1000")
    assert served.retry_after == _wire.QUOTA_WAIT == 1.0
    if provider == "anthropic":
        assert "anthropic-ratelimit-input-tokens-reset" in headers
    seconds = kind_served("quota", provider, stream=False, model="m", retry_after_format="seconds")
    assert [n for n, _ in seconds.headers if n.startswith("retry-after")] == ["retry-after"]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (402, "billing_error"),
        (413, "request_too_large"),  # documented, though the SDK's ErrorObject lacks it
        (418, "invalid_request_error"),
        (502, "api_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
    ],
)
def test_anthropic_error_types(status, kind):
    assert _wire.error_type("anthropic", status) == kind


def test_the_kits_call_ids_show_as_tool_use_ids_and_read_back():
    assert tool_use_id("call_12") == "toolu_call_12"
    assert from_tool_use_id("toolu_call_12") == "call_12"
    for own in ("toolu_01A09q90qw90lq917835lq9", "call_x", "abc", "toolu_call_"):
        assert from_tool_use_id(tool_use_id(own)) == own  # not the kit's: as it is


def test_an_anthropic_conversation_reads_back_with_the_kits_ids():
    request = model_request(
        "anthropic",
        {
            "messages": [
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_call_1", "name": "w", "input": {}},
                        {"type": "tool_use", "id": "toolu_01real", "name": "w", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_call_1", "content": "a"},
                        {"type": "tool_result", "tool_use_id": "toolu_01real", "content": "b"},
                    ],
                },
            ]
        },
        stream=False,
    )
    assert [c.id for c in request.messages[1].tool_calls] == ["call_1", "toolu_01real"]
    assert [m.tool_call_id for m in request.messages[2:]] == ["call_1", "toolu_01real"]
