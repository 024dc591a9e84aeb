"""The SDK client fixtures: one build per session, a clean copy per test, the kit switched on."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

RESET = """
import openai

SHARED = []

def test_a_changes_its_client(openai_client, anthropic_client):
    SHARED.append((openai_client._client, anthropic_client._client))
    openai_client.max_retries = 7
    openai_client._custom_headers["x-leak"] = "1"
    anthropic_client.with_options(max_retries=0)  # a copy of the copy: changes nothing here
    assert anthropic_client.max_retries == 2

def test_b_sees_none_of_it(openai_client, anthropic_client):
    SHARED.append((openai_client._client, anthropic_client._client))
    assert openai_client.max_retries == 2
    assert "x-leak" not in openai_client._custom_headers
    assert str(openai_client.base_url) == "https://api.openai.com/v1/"
    assert openai_client.api_key == "sk-agentfaults-test-key"

def test_c_one_http_client_for_the_session():
    assert SHARED[0][0] is SHARED[1][0]
    assert SHARED[0][1] is SHARED[1][1]

def test_d_a_closed_client_is_rebuilt(openai_client):
    with openai_client:
        pass
    assert openai_client._client.is_closed

def test_e_after_the_close(openai_client):
    assert not openai_client._client.is_closed
"""


def test_each_test_gets_a_clean_copy_of_one_session_client(pytester):
    pytester.makepyfile(test_reset=RESET)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=5)


LAZY = """
import sys

import pytest

def test_plain():
    assert "openai" not in sys.modules
    assert "anthropic" not in sys.modules

def test_uses_the_kit(openai_client):
    assert "pytest_agentfaults.runtime.clock" in sys.modules
    import openai

    with pytest.raises(openai.PermissionDeniedError):  # no route: the guard is on
        openai_client.models.list()
"""


def test_the_sdks_load_only_for_the_fixtures_and_these_use_the_kit(pytester):
    pytester.makepyfile(test_lazy=LAZY)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)  # test_uses_the_kit: passed, then teardown
    result.stdout.fnmatch_lines(
        [
            "*test_uses_the_kit sent requests to real hosts*",
            "*GET https://api.openai.com/v1/models*",
        ]
    )


SUMMARY = """
import asyncio
import json
import pytest

CHAT = {chat!r}

@pytest.mark.inject_fault(http=503, times=2)
def test_sync(openai_client, http_faults, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post("https://api.openai.com/v1/chat/completions").respond(200, json=CHAT)
    openai_client.chat.completions.create(model="gpt-4o", messages=[{{"role": "user", "content": "hi"}}])

@pytest.mark.inject_fault(http=529)
def test_async(async_anthropic_client, http_faults, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post("https://api.anthropic.com/v1/messages").respond(200, json=MESSAGE)
    asyncio.run(async_anthropic_client.messages.create(
        model="claude-haiku-4-5", max_tokens=5, messages=[{{"role": "user", "content": "hi"}}]
    ))

MESSAGE = {message!r}
"""


def test_the_summary_counts_the_sdks_retries(pytester):
    import json
    from pathlib import Path

    wire = Path(__file__).parents[2] / "fixtures" / "wire"
    chat = json.loads((wire / "openai" / "chat_text.json").read_text())
    message = json.loads((wire / "anthropic" / "messages_text.json").read_text())
    pytester.makepyfile(test_summary=SUMMARY.format(chat=chat, message=message))
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["agentfaults: 3 faults injected, 0 retries, 3 HTTP retries, *"])


OWN_FIXTURE = """
import sys

import pytest

@pytest.fixture
def openai_client():
    return "the user's own"

def test_it(openai_client):
    assert openai_client == "the user's own"
    assert "pytest_agentfaults.runtime.clock" not in sys.modules  # not a kit test
"""


def test_a_users_own_fixture_of_the_same_name_does_not_switch_the_kit_on(pytester):
    pytester.makepyfile(test_own=OWN_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


SAME = """
SEEN = []

def test_a_changes_the_session_client(openai_client):
    SEEN.append(openai_client)
    openai_client.organization = "org-leak"
    openai_client.added_by_a = True
    openai_client.chat = "replaced by test a"
    openai_client._custom_query["leak"] = "1"

def test_b_gets_it_back_as_built(openai_client):
    SEEN.append(openai_client)
    assert SEEN[0] is SEEN[1]  # one client for the session, no copy per test
    assert openai_client.organization is None
    assert not hasattr(openai_client, "added_by_a")
    assert openai_client.chat != "replaced by test a"
    assert openai_client._custom_query == {}

def test_c_a_server_gets_a_copy(openai_client, llm_server):
    assert openai_client is not SEEN[0]
    assert str(openai_client.base_url).startswith(llm_server.url)
"""


def test_a_sync_client_is_the_session_client_put_back_as_built(pytester):
    pytester.makepyfile(test_same=SAME)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)
