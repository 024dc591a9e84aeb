"""Fault coverage of a host's malformed answers: what a script served, and what to suggest.

A model's empty or blocked answer and its malformed tool arguments reach a client as an
answer, not a failure of the HTTP layer: only the script that served them
(``llm_server.script`` or ``http_faults.script``) knows. A served ``malformed.empty()``
or ``malformed.blocked()`` step counted nowhere, and the "to cover next" line of a host's
``margs`` and ``empty`` cells named ``llm=`` faults, which reach `af.Agent`'s model only,
never a host an SDK client or a framework's model talks to. Here a served step covers the
host that served it, and each suggestion for such a cell is pasted into a test of a real
SDK client; the next session must show the cell covered.
"""

from __future__ import annotations

import json
import re

# Loaded here, before pytester's in-process runs (a module one of them loads is dropped
# after it).
import anthropic  # noqa: F401
import openai  # noqa: F401
import pytest

HEAD = """
import anthropic
import openai
import pytest

from pytest_agentfaults.testing import call_tool, malformed, say

SEARCH = {"name": "search", "parameters": {"type": "object", "properties": {}}}


def ask_openai(base_url=None):
    client = openai.OpenAI(api_key="k", base_url=base_url, max_retries=0)
    try:
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "go"}],
            tools=[{"type": "function", "function": SEARCH}],
        )
    except openai.APIError:
        pass  # what the client makes of the answer is its own business here


def ask_anthropic():
    client = anthropic.Anthropic(api_key="k", max_retries=0)
    client.messages.create(
        model="m",
        max_tokens=10,
        messages=[{"role": "user", "content": "go"}],
        tools=[{"name": "search", "input_schema": SEARCH["parameters"]}],
    )
"""

# (fixture, how the test asks, the plain script) by the host the client talks to
HOSTS = {
    "llm_server": (
        "llm_server",
        "ask_openai(llm_server.base_url('openai'))",
        "llm_server.script([say('ok')])",
    ),
    "api.openai.com": ("http_faults", "ask_openai()", "http_faults.script('openai', [say('ok')])"),
    "api.anthropic.com": (
        "http_faults",
        "ask_anthropic()",
        "http_faults.script('anthropic', [say('ok')])",
    ),
    "models.internal.test": (
        "http_faults",
        "ask_openai('https://models.internal.test/v1')",
        "http_faults.script('openai', [say('ok')], "
        "url='https://models.internal.test/v1/chat/completions')",
    ),
}


def _session(pytester: pytest.Pytester, host: str, script: str, name: str = "one") -> dict:
    fixture, ask, _ = HOSTS[host]
    test = f"\n\ndef test_{name}({fixture}):\n    {script}\n    {ask}\n"
    path = pytester.makepyfile(**{f"test_{name}": HEAD + test})
    result = pytester.runpytest("-p", "no:randomly", path.name, "--agentfaults-coverage=cov.json")
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "cov.json").read_text())


def _host(data: dict, host: str) -> dict:
    [row] = [r for r in data["rows"] if (r["kind"], r["name"]) == ("host", host)]
    return row["cells"]


@pytest.mark.parametrize("step", ["malformed.empty()", "malformed.blocked()"])
@pytest.mark.parametrize("host", ["llm_server", "api.openai.com"])
def test_a_served_empty_or_blocked_answer_covers_the_host_that_served_it(
    pytester: pytest.Pytester, host: str, step: str
) -> None:
    script = HOSTS[host][2].replace("say('ok')", step)

    cells = _host(_session(pytester, host, script), host)

    assert cells["empty_or_blocked"]["covered"]
    assert cells["empty_or_blocked"]["sources"] == ["user"]  # as a ScriptedModel's answer
    assert [c for c, cell in cells.items() if cell["covered"]] == ["empty_or_blocked"]


def test_a_step_the_script_never_served_covers_nothing(pytester: pytest.Pytester) -> None:
    script = "http_faults.script('openai', [say('ok'), malformed.empty()], strict=False)"

    cells = _host(_session(pytester, "api.openai.com", script), "api.openai.com")

    assert not cells["empty_or_blocked"]["covered"]


def test_a_served_bad_tool_call_covers_the_host_that_served_it(
    pytester: pytest.Pytester,
) -> None:
    script = "http_faults.script('openai', [malformed.tool_args()])"

    cells = _host(_session(pytester, "api.openai.com", script), "api.openai.com")

    assert cells["malformed_tool_args"]["covered"]


def _followed(suggestion: str) -> str:
    """The script call a suggestion names, with its ``...`` (the rest of a script) dropped."""
    call = re.match(r"((?:llm_server|http_faults)\.script\(.*?\)) \(", suggestion)
    assert call, suggestion
    return call.group(1).replace(", ...]", "]")


@pytest.mark.parametrize("host", list(HOSTS))
def test_each_suggestion_for_a_hosts_malformed_answers_covers_its_cell(
    pytester: pytest.Pytester, host: str
) -> None:
    before = _session(pytester, host, HOSTS[host][2], "plain")
    suggestions = {
        s["fault"]: s["marker"]
        for s in before["suggestions"]
        if s["row"] == f"host {host}" and s["fault"] in ("malformed_tool_args", "empty_or_blocked")
    }
    assert set(suggestions) == {"malformed_tool_args", "empty_or_blocked"}
    for fault_class, suggestion in suggestions.items():
        assert 'llm="' not in suggestion  # never reaches a host: af.Agent's model only
        if host == "models.internal.test":  # no provider's own host: it may serve no model
            assert f"agentfaults_coverage_exclude = {host}:{fault_class})" in suggestion
        after = _session(pytester, host, _followed(suggestion), fault_class)
        assert _host(after, host)[fault_class]["covered"], (host, fault_class, suggestion)
