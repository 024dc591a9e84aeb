"""One accessor for the SDKs' retry count: ``.retry_count``, on events and on llm_server requests."""

from __future__ import annotations

import openai
import pytest

from pytest_agentfaults import say

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.inject_fault(http=503, times=2)
def test_the_trace_and_llm_server_give_the_same_retry_counts(llm_server, trace):
    llm_server.script([say("hello")])
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="sk-test-000") as client:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    from_requests = [r.retry_count for r in llm_server.requests]
    from_events = [e.retry_count for e in trace.of("http.request")]
    assert from_requests == from_events == [0, 1, 2]


def test_an_event_without_the_header_has_no_retry_count():
    from pytest_agentfaults.runtime.events import Event

    assert Event(type="http.request", url="http://x").retry_count is None
    assert "retry_count" not in Event(type="http.request").model_dump(exclude_none=True)
