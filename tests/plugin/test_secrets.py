"""No secret reaches any output: terminal, trace files, HTML report, junit XML, logs.

Random keys (new every run) sit in the environment, in request headers, in query
strings and in a URL's user info; a suite exercises tool, HTTP (in-process and over the loopback server) and LLM
faults with every output switched on; then the terminal and every file written (names
included) are searched for each key and for any 16-character slice of one.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

pytest.importorskip("httpcore2")  # see test_http_plugin.py: loaded in the outer session
pytest.importorskip("httpx2")

SLICE = 16

SUITE = '''
import logging
import os

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

E = os.environ
API = "https://api.example.com/v1/things"
NEVER = "https://api.example.com/v1/never?key=" + E["AF_HEX"]


def headers():
    return {"x-api-key": E["AF_XAPI"], "Authorization": "Bearer " + E["AF_BEARER"]}


@af.tool
def fetch(url: str, token: str) -> str:
    """Fetch ``url`` with ``token``."""
    raise ConnectionError(f"cannot reach {url} with token {token}")


def agent(model, **kw):
    return af.Agent("bot", model=model, tools=[fetch], **kw)


def keyed_call():
    return call_tool("fetch", url=API + "?key=" + E["AF_HEX"], token=E["AF_PROJ"])


def test_tool_fault_recovers(faults):
    faults.tool("fetch").raises(ConnectionError("refused " + API + "?key=" + E["AF_HEX"]))
    faults.tool("fetch").returns("page " + E["AF_ANT"])
    logging.getLogger("pytest_agentfaults").debug("calling with %s", E["AF_PROJ"])
    result = agent(ScriptedModel([keyed_call(), say("done")])).run("go")
    assert result.output == "done"


def test_tool_exhaustion_raises(faults):
    config = af.ResilienceConfig(max_retries=1, strategy="none", on_exhaustion="raise")
    agent(ScriptedModel([keyed_call(), say("never")]), resilience=config).run("go")


@pytest.mark.inject_fault(http=503, url=API, times=1)
def test_http_fault_in_process(http_faults):
    http_faults.get(API).respond(200, json={"ok": True})
    url = API + "?key=" + E["AF_HEX"] + "&api_key=" + E["AF_ANT"]
    with httpx.Client(headers=headers()) as client:
        statuses = [client.get(url).status_code for _ in range(2)]
    assert statuses == [503, 200]


@pytest.mark.inject_fault(http=503, url="/api/chat", times=1)
def test_llm_server_fault_then_failure(llm_server):
    llm_server.script([say("hello")])
    url = llm_server.base_url("ollama") + "/api/chat?key=" + E["AF_HEX"]
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": E["AF_PROJ"]}]}
    with httpx.Client(headers=headers()) as client:
        first = client.post(url, json=body)
        second = client.post(url, json=body)
    assert (first.status_code, second.status_code) == (503, 200)
    assert second.json()["message"]["content"] == "a different answer"


def test_llm_fault_over_the_wire(faults, llm_server):
    faults.llm.rate_limit(retry_after=1)
    llm_server.script([say("done")], strict=False)  # the 429 ends the run: "done" stays
    model = af.OpenAIModel("m", base_url=llm_server.base_url("openai"), api_key=E["AF_PROJ"])
    with model, pytest.raises(af.RateLimitError):
        agent(model).run("go " + E["AF_ANT"])


def test_unmatched_request_with_a_password_in_its_url(http_faults):
    with httpx.Client() as client:
        client.get("https://bob:" + E["AF_PASS"] + "@api.example.com/v1/private")


@pytest.mark.inject_fault(http=503, url=NEVER)
def test_strict_fault_never_fires():
    logging.getLogger("app").info("the key is %s", E["OPENAI_API_KEY"])
'''


def _keys() -> dict[str, str]:
    return {
        "AF_PROJ": "sk-proj-" + secrets.token_urlsafe(32),
        "AF_ANT": "sk-ant-api03-" + secrets.token_urlsafe(32),
        "AF_HEX": secrets.token_hex(20),
        "AF_BEARER": secrets.token_urlsafe(32),
        "AF_XAPI": secrets.token_urlsafe(24),
        "AF_PASS": secrets.token_urlsafe(24),
        "OPENAI_API_KEY": "sk-" + secrets.token_urlsafe(32),
    }


def _slices(key: str) -> set[str]:
    return {key[i : i + SLICE] for i in range(len(key) - SLICE + 1)}


def _leaks(texts: dict[str, str], keys: dict[str, str]) -> list[str]:
    found = []
    for where, text in texts.items():
        for name, key in keys.items():
            hits = [piece for piece in _slices(key) if piece in text]
            if hits:
                found.append(f"{name} in {where}: ...{hits[0]}...")
    return found


def _written(root: Path, skip: set[Path]) -> dict[str, str]:
    texts = {}
    for path in sorted(root.rglob("*")):
        texts[f"name {path}"] = str(path.relative_to(root))
        if path.is_file() and path not in skip:
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return texts


@pytest.fixture
def keyed(suite, monkeypatch):
    keys = _keys()
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    pytester = suite(SUITE)
    return pytester, keys


def _run(pytester, keys, *, how: str):
    root = pytester.path
    options = [
        "-rA",
        "-l",
        "--log-level=DEBUG",
        "--agentfaults-trace=always",
        f"--agentfaults-trace-dir={root / 'traces'}",
        f"--agentfaults-html={root / 'out' / 'report.html'}",
        f"--junitxml={root / 'out' / 'junit.xml'}",
        # live logging and a log file: users turn them on too
        "--log-cli-level=DEBUG",
        f"--log-file={root / 'out' / 'log.txt'}",
        "--log-file-level=DEBUG",
    ]
    if how == "xdist":  # workers render and ship the reports; the controller writes
        options += ["-n", "2"]
    run = pytester.runpytest if how == "in-process" else pytester.runpytest_subprocess
    result = run(*options)
    outcomes = result.parseoutcomes()
    # The suite passes and fails where it should: the faults really fired.
    assert outcomes.get("passed") == 4, outcomes
    assert outcomes.get("failed") == 3
    assert outcomes.get("errors") == 1  # the strict fault that never fired, at teardown
    out = result.stdout.str()
    assert "ToolExecutionError" in out
    assert "never fired" in out
    assert "UnmatchedRequestError" in out
    assert "[REDACTED]" in out
    assert len(list((root / "traces").glob("*.json"))) == 7
    texts = {"stdout": out, "stderr": result.stderr.str()}
    texts.update(_written(root, skip={root / "test_suite.py"}))
    return texts


@pytest.mark.parametrize(
    "how", ["in-process", "subprocess", pytest.param("xdist", marks=pytest.mark.slow)]
)
def test_no_key_reaches_any_output(keyed, how):
    pytester, keys = keyed
    texts = _run(pytester, keys, how=how)
    assert _leaks(texts, keys) == []


def test_the_search_finds_a_key_when_there_is_one():
    # The grep above must be able to fail: a key cut to any 16 characters is found.
    keys = _keys()
    text = f"x {keys['AF_HEX'][3:19]} y"
    assert _leaks({"t": text}, keys) == [f"AF_HEX in t: ...{keys['AF_HEX'][3:19]}..."]


NAMED_KEY = """
import os

import anthropic
import pytest

ANTHROPIC_KEY = os.environ["AF_ANT"]


@pytest.mark.inject_fault(http=400)
def test_named_key(http_faults):
    with anthropic.Anthropic(api_key=ANTHROPIC_KEY) as client:
        client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}])
"""


def test_a_traceback_line_that_names_a_key_is_shown_as_written(pytester, monkeypatch):
    # The name is code, not the key: the line reads as in the file, its ")" included.
    monkeypatch.setenv("AF_ANT", "sk-ant-api03-" + secrets.token_urlsafe(32))
    pytester.makepyfile(test_named=NAMED_KEY)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-l", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    line = "with anthropic.Anthropic(api_key=ANTHROPIC_KEY) as client:"
    assert line in result.stdout.str()
    assert line in junit.read_text(encoding="utf-8")


HEADER_EXPRESSION = """
import os

import httpx
import pytest


@pytest.mark.inject_fault(http=401, url="https://api.example.test/v1")
def test_built_header(http_faults):
    token = os.environ["AF_GW"]
    with httpx.Client() as client:
        response = client.get("https://api.example.test/v1", headers={"Authorization": "Bearer " + token})
    assert response.status_code == 200
"""


def test_a_header_built_by_an_expression_reads_as_written_and_its_value_stays_secret(
    pytester, monkeypatch
):
    # The source line holds code: `"Bearer " + token` is shown as written; the token the
    # request carried (learned by the kit, no known shape) is redacted by value.
    token = "gw_live_" + secrets.token_hex(16)
    monkeypatch.setenv("AF_GW", token)
    pytester.makepyfile(test_header=HEADER_EXPRESSION)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-l", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    line = 'headers={"Authorization": "Bearer " + token})'
    for text in (result.stdout.str(), junit.read_text(encoding="utf-8").replace("&quot;", '"')):
        assert line in text
        assert token not in text
    result.stdout.fnmatch_lines(["token*= '[[]REDACTED[]]'"])  # -l: the local holding it


# The audit's repro: a key with no known prefix, seen by the kit in a request's headers,
# then printed, logged, held in a local, quoted by a tool's error. Each key is redacted by
# value in every output from the moment the kit saw it: the in-process layer (an official
# SDK over httpx2), the loopback server (a request the in-process layer never sees) and the
# network guard (a loopback request nothing answers) each learn what they see.
LEARNED = """
import json
import logging
import os
import socket
import urllib.request

import openai
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

GATEWAY_KEY = os.environ["AF_GATEWAY"]
SERVER_KEY = os.environ["AF_SERVER"]
GUARDED_KEY = os.environ["AF_GUARDED"]
log = logging.getLogger("app")


@af.tool
def fetch(url: str) -> str:
    \"\"\"Fetch.\"\"\"
    raise ConnectionError(f"the gateway refused {GATEWAY_KEY}")


@pytest.mark.inject_fault(http=400)
def test_key_sent_then_logged(http_faults):
    with openai.OpenAI(api_key=GATEWAY_KEY, max_retries=0) as client:
        print("client key:", client.api_key)
        key = client.api_key
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        finally:
            log.warning("sent key %s", key)
            model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
            af.Agent("bot", model=model, tools=[fetch]).run("go")


def test_key_sent_to_the_loopback_server(llm_server):
    llm_server.script([say("hi")])
    request = urllib.request.Request(
        llm_server.base_url("openai") + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode(),
        headers={"x-api-key": SERVER_KEY, "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=5).close()
    print("server key:", SERVER_KEY)
    assert not SERVER_KEY, f"failed with {SERVER_KEY}"


def test_key_sent_where_nothing_listens(faults):
    with socket.socket() as bound:  # bound, not listening: a connection is refused at once
        bound.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d/v1" % bound.getsockname()[1]
        with openai.OpenAI(api_key=GUARDED_KEY, base_url=url, max_retries=0) as client:
            with pytest.raises(openai.APIConnectionError):
                client.models.list()
    print("guarded key:", GUARDED_KEY)
    assert not GUARDED_KEY, f"failed with {GUARDED_KEY}"


def test_a_later_test_that_never_uses_the_kit():
    print("later:", GATEWAY_KEY)
    log.warning("later key %s", GATEWAY_KEY)
"""


@pytest.fixture
def learned_keys(pytester, monkeypatch):
    keys = {
        "AF_GATEWAY": "gw_live_" + secrets.token_hex(16),
        "AF_SERVER": "srv_" + secrets.token_hex(16),
        "AF_GUARDED": "grd_" + secrets.token_hex(16),
    }
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_learned=LEARNED)
    return keys


@pytest.mark.parametrize("how", ["in-process", pytest.param("xdist", marks=pytest.mark.slow)])
def test_a_key_the_kit_saw_in_a_request_is_redacted_by_value_everywhere(
    pytester, learned_keys, how
):
    root = pytester.path
    options = [
        "-p",
        "no:randomly",  # the last test runs after the others learned the keys
        "-l",
        "-rA",
        "--agentfaults-trace=always",
        f"--agentfaults-trace-dir={root / 'traces'}",
        f"--agentfaults-html={root / 'out' / 'report.html'}",
        f"--junitxml={root / 'out' / 'junit.xml'}",
        "-o",
        "junit_logging=all",  # the captured output in the XML too
        f"--html={root / 'out' / 'pytest-html.html'}",
        "--self-contained-html",
        "--log-cli-level=WARNING",
        f"--log-file={root / 'out' / 'log.txt'}",
    ]
    if how == "xdist":  # one worker runs the file, in order, and redacts before shipping
        result = pytester.runpytest_subprocess(*options, "-n", "2", "--dist=loadfile")
    else:
        result = pytester.runpytest(*options)
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    texts = {"stdout": out, "stderr": result.stderr.str()}
    texts.update(_written(root, skip={root / "test_learned.py"}))
    assert _leaks(texts, learned_keys) == []
    # shown where the key was, the code around it intact
    for line in (
        "client key: [REDACTED]",
        "server key: [REDACTED]",
        "guarded key: [REDACTED]",
        "later: [REDACTED]",
        "sent key [REDACTED]",
        "later key [REDACTED]",
        "with openai.OpenAI(api_key=GATEWAY_KEY, max_retries=0) as client:",
    ):
        assert line in out, line
    result.stdout.re_match_lines([r"key += '\[REDACTED\]'"])  # the -l local
    junit = (root / "out" / "junit.xml").read_text(encoding="utf-8")
    assert "client key: [REDACTED]" in junit
    assert "key        = '[REDACTED]'" in junit  # the -l local
    assert "AssertionError: failed with [REDACTED]" in junit
    assert "the gateway refused [REDACTED]" in (root / "out" / "report.html").read_text()
    assert "sent key [REDACTED]" in (root / "out" / "log.txt").read_text()
