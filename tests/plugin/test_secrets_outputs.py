"""A learned key is redacted from every output written after it was learned.

The audit's findings: under xdist a key one worker learned leaked from another worker's
reports; a key printed before the kit learned it stayed in the outputs written at the
session's end (``-rA``, junit XML, pytest-html, our HTML report); warnings and
``record_property`` values reached the terminal and junit XML as written.
"""

from __future__ import annotations

import secrets

import pytest

pytest.importorskip("httpx2")

# Sends the key to a gateway: the kit learns it from the request's header.
LEARNS = """
import os

import openai
import pytest

GW = os.environ["AF_GW"]


@pytest.mark.inject_fault(http=401)
def test_learns(http_faults):
    with openai.OpenAI(api_key=GW, base_url="https://gw.example.test/v1", max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model="m", messages=[])
"""

# Quotes the key, and never sends it: in a file that runs first, or on another worker.
QUOTES = """
import os
import warnings

import pytest

GW = os.environ["AF_GW"]


def test_prints(record_property):
    print("configured key:", GW)
    record_property("gateway", GW)
    record_property("known", "Bearer sk-proj-" + "PropKey1234567890abcdefXYZ")


@pytest.mark.parametrize("i", range(3))
def test_fails(i, trace):
    assert GW == "other", f"bad key {GW}"


@pytest.mark.parametrize("key", [GW])
def test_id(key, trace):
    print("id key:", key)


def test_warns():
    warnings.warn(f"deprecated key {GW}", UserWarning)
    warnings.warn("OPENAI key sk-proj-" + "WarnKey1234567890abcdefXYZ is old", UserWarning)
"""

KNOWN = ("sk-proj-PropKey1234567890abcdefXYZ", "sk-proj-WarnKey1234567890abcdefXYZ")


@pytest.fixture
def gateway_key(pytester, monkeypatch):
    key = "gw" + secrets.token_hex(12)  # no shape the rules know
    monkeypatch.setenv("AF_GW", key)
    # "a" sorts first: serially, its tests quote the key before the kit learns it
    pytester.makepyfile(test_a_quotes=QUOTES, test_b_learns=LEARNS)
    return key


@pytest.mark.parametrize("how", ["serial", pytest.param("xdist", marks=pytest.mark.slow)])
def test_a_learned_key_leaves_no_output_written_after_it_was_learned(pytester, gateway_key, how):
    root = pytester.path
    out = root / "out"
    options = [
        "-p",
        "no:randomly",
        "-rA",
        "-W",
        "always::UserWarning",
        f"--junitxml={out / 'junit.xml'}",
        "-o",
        "junit_logging=all",
        "-o",
        "junit_family=xunit1",  # where record_property is allowed
        f"--html={out / 'pytest-html.html'}",
        "--self-contained-html",
        f"--agentfaults-html={out / 'af.html'}",
        "--agentfaults-trace=always",
        f"--agentfaults-trace-dir={out / 'traces'}",
    ]
    if how == "xdist":  # each file on its own worker: the quoting one never learns the key
        result = pytester.runpytest_subprocess(*options, "-n", "2", "--dist=loadfile")
    else:
        result = pytester.runpytest(*options)
    result.assert_outcomes(passed=4, failed=3, warnings=2)
    stdout = result.stdout.str()
    written = {
        path.name: f"{path.name}\n{path.read_text(encoding='utf-8')}"
        for path in out.rglob("*")
        if path.is_file()
    }
    # what is written as the tests run is left out: pytest's -v line, and the short
    # summary, which name a test by its id (the id is not rewritten: see the docs)
    kept = [
        line
        for line in stdout.splitlines()
        if not line.startswith("PASSED test_a_quotes.py::test_id[")
    ]
    texts = {"stdout": "\n".join(kept), **written}
    leaks = [where for where, text in texts.items() for key in (gateway_key, *KNOWN) if key in text]
    assert leaks == []
    assert "id key: [REDACTED]" in stdout
    assert "test_id[[REDACTED]]" in stdout  # the -rA header
    # shown where the key was
    assert "configured key: [REDACTED]" in stdout
    assert "AssertionError: bad key [REDACTED]" in stdout
    assert "UserWarning: deprecated key [REDACTED]" in stdout
    assert 'value="[REDACTED]"' in written["junit.xml"]
    assert 'value="Bearer [REDACTED]"' in written["junit.xml"]
    assert "bad key [REDACTED]" in written["af.html"]
    assert "configured key: [REDACTED]" in written["pytest-html.html"]


SNAPSHOT = """
import os

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, say

GW = os.environ["AF_GW"]


def test_snapshot(trace):
    af.Agent("bot", model=ScriptedModel([say("ok")])).run(f"use key {GW}")
    trace.assert_matches_snapshot("snaps/golden.json")
"""


def test_a_golden_trace_keeps_no_learned_key(pytester, gateway_key):
    # Golden files are committed: written through the same redaction as trace files.
    pytester.makepyfile(test_c_snapshot=SNAPSHOT)
    options = ("-p", "no:randomly", "test_b_learns.py", "test_c_snapshot.py")
    pytester.runpytest(*options, "--agentfaults-update-snapshots").assert_outcomes(passed=2)
    golden = (pytester.path / "snaps" / "golden.json").read_text(encoding="utf-8")
    assert gateway_key not in golden
    assert "use key [REDACTED]" in golden
    # and the next run, which sends the key again, matches it
    pytester.runpytest(*options).assert_outcomes(passed=2)


GATEWAY_HEADERS = """
import os

import httpx
import openai
import pytest

APIM = os.environ["AF_APIM"]
XAUTH = os.environ["AF_XAUTH"]
QUERY = os.environ["AF_QUERY"]


@pytest.mark.inject_fault(http=401)
def test_azure_api_management(http_faults):
    headers = {"Ocp-Apim-Subscription-Key": APIM}
    with openai.OpenAI(
        api_key="unused", base_url="https://apim.example.test/v1", default_headers=headers,
        max_retries=0,
    ) as client:
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="m", messages=[])
    print("apim:", APIM)


@pytest.mark.inject_fault(http=503, url="https://api.example.test/z", times=2)
def test_x_auth_and_auth_query(http_faults):
    httpx.get("https://api.example.test/z", headers={"X-Auth": XAUTH})
    httpx.get("https://api.example.test/z?auth=" + QUERY)
    print("x-auth:", XAUTH, "auth:", QUERY)
"""


def test_the_credentials_gateways_send_are_learned(pytester, monkeypatch):
    keys = {name: name.lower() + secrets.token_hex(8) for name in ("APIM", "XAUTH", "QUERY")}
    for name, value in keys.items():
        monkeypatch.setenv(f"AF_{name}", value)
    pytester.makepyfile(test_gateways=GATEWAY_HEADERS)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-rA", "--agentfaults-trace=always", f"--junitxml={junit}")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    texts = {"stdout": out, "junit": junit.read_text(encoding="utf-8")}
    assert [(w, k) for w, text in texts.items() for k in keys.values() if k in text] == []
    assert "apim: [REDACTED]" in out
    assert "x-auth: [REDACTED] auth: [REDACTED]" in out


PARAM_IDS = """
import os

import openai
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

GW = os.environ["AF_GW"]


@af.tool
def fetch(url: str) -> str:
    '''Fetch.'''
    return "ok"


@pytest.mark.inject_fault(http=401)
def test_a_learns(http_faults):
    with openai.OpenAI(api_key=GW, base_url="https://gw.example.test/v1", max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model="m", messages=[])


@pytest.mark.parametrize("key", ["sk-proj-" + "ParamKey1234567890abcdefXYZ", GW, "plain"])
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_b_param(key, trace):
    af.Agent("bot", model=ScriptedModel([call_tool("fetch", url="u"), say("ok")]), tools=[fetch]).run("go")


@pytest.mark.parametrize("key", ["sk-proj-" + "FailKey1234567890abcdefXYZ"])
def test_c_fails(key, trace):
    assert key == "other"


@pytest.mark.parametrize("key", ["x"], ids=["sk-proj-" + "IdKey1234567890abcdefXYZ"])
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_d_explicit_id(key, trace):
    af.Agent("bot", model=ScriptedModel([call_tool("fetch", url="u"), say("ok")]), tools=[fetch]).run("go")
"""


def test_a_key_in_a_parametrize_id_reaches_no_report(pytester, monkeypatch):
    key = "gw" + secrets.token_hex(12)
    monkeypatch.setenv("AF_GW", key)
    pytester.makepyfile(test_ids=PARAM_IDS)
    out = pytester.path / "out"
    result = pytester.runpytest(
        "-p", "no:randomly", "-v", "-rA", "--agentfaults-trace=always",
        f"--junitxml={out / 'junit.xml'}", f"--html={out / 'ph.html'}", "--self-contained-html",
        f"--agentfaults-html={out / 'af.html'}", f"--agentfaults-trace-dir={out / 'traces'}",
        f"--agentfaults-coverage={out / 'cov.json'}",
    )  # fmt: skip
    result.assert_outcomes(passed=5, failed=1)
    known = ("sk-proj-ParamKey1234567890abcdefXYZ", "sk-proj-FailKey1234567890abcdefXYZ")
    stdout = result.stdout.str()
    texts = {"stdout": stdout}
    for path in out.rglob("*"):
        texts[f"name {path.name}"] = path.name
        if path.is_file():
            texts[path.name] = path.read_text(encoding="utf-8")
    # a known shape never enters a node id: pytest's own lines are clean too
    assert [where for where, text in texts.items() for k in known if k in text] == []
    # a learned key did, before it was learned: our outputs, the files written at the
    # session's end and the terminal (the -v line written after it was learned) are clean
    assert [where for where, text in texts.items() if key in text] == []
    assert "test_b_param[[REDACTED]] PASSED" in stdout
    ours = {w: t for w, t in texts.items() if w != "stdout"}
    # an explicit ids= is pytest's as written in the files it writes (junit XML,
    # pytest-html); the terminal and ours redact its key shape
    explicit = "sk-proj-IdKey1234567890abcdefXYZ"
    assert explicit not in stdout
    assert "test_d_explicit_id[[REDACTED]] PASSED" in stdout
    ours = {w: t for w, t in ours.items() if w not in ("junit.xml", "ph.html")}
    assert [where for where, text in ours.items() if explicit in text] == []
    # the replay command of the failed test runs it
    replay = next(line for line in stdout.splitlines() if "replay: pytest" in line)
    nodeid = replay.split("'")[1]
    assert "test_c_fails[" in nodeid
    pytester.runpytest("-p", "no:randomly", nodeid).assert_outcomes(failed=1)


# A key the suite reads from the environment: in a parametrize id, and in a plain test's
# failure. Neither test uses the kit, so nothing is learned from a request.
FROM_ENV = """
import os

import pytest

KEY = os.environ["ACME_API_KEY"]


@pytest.mark.parametrize("key", [KEY])
def test_uses(key):
    assert key


def test_fails():
    settings = {"key": KEY, "store": os.environ["PASSWORD_STORE_DIR"]}
    assert settings == {}
"""


def test_a_key_in_the_environment_is_redacted_from_the_start(pytester, monkeypatch):
    key = "acme" + secrets.token_hex(12)  # no known shape: only its variable's name tells
    store = str(pytester.path / "password-store")  # a credential-named path is no key
    monkeypatch.setenv("ACME_API_KEY", key)
    monkeypatch.setenv("PASSWORD_STORE_DIR", store)
    pytester.makepyfile(test_env=FROM_ENV)
    out = pytester.path / "junit.xml"
    result = pytester.runpytest("-p", "no:randomly", "-v", "-rA", f"--junitxml={out}")
    result.assert_outcomes(passed=1, failed=1)
    stdout = result.stdout.str()
    assert key not in stdout  # the -v line too: the id is the argument's name
    assert key not in out.read_text(encoding="utf-8")
    assert "test_uses[key]" in stdout
    assert "[REDACTED]" in stdout  # the failed assertion shows where the key was
    assert store in stdout  # the path is left as it is


class _Writer:
    """Sees the terminal writer during the session and keeps it for after."""

    def __init__(self) -> None:
        self.writer: object = None
        self.during: set[str] = set()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.writer = session.config.pluginmanager.get_plugin("terminalreporter")._tw

    def pytest_sessionfinish(self) -> None:
        self.during = set(vars(self.writer))


def test_the_terminal_writer_gets_its_own_methods_back(pytester):
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    seen = _Writer()
    pytester.runpytest("-p", "no:randomly", plugins=[seen]).assert_outcomes(passed=1)
    # pytest 9's writer has write_raw beside write; pytest 8's has write only
    methods = {"write", "write_raw"} & set(dir(type(seen.writer)))
    assert "write" in methods
    assert methods <= seen.during  # redacting while the session ran
    assert methods.isdisjoint(vars(seen.writer))


# A key shape written in a plain suite's source, shown by pytest's own terminal lines:
# --setup-show prints a fixture's parameter value, -v an explicit id.
SETUP_SHOW = """
import pytest

@pytest.fixture(params=["sk-proj-" + "SetupShow1234567890abcdefXYZ"])
def key(request):
    return request.param

def test_uses(key):
    assert key

@pytest.mark.parametrize("n", [1], ids=["sk-proj-" + "ExplicitId1234567890abcdefXYZ"])
def test_explicit(n):
    assert n
"""


def test_no_key_shape_reaches_the_terminal_from_setup_show_or_an_explicit_id(pytester):
    pytester.makepyfile(test_shown=SETUP_SHOW)
    result = pytester.runpytest("-p", "no:randomly", "-v", "--setup-show", "-rA")
    result.assert_outcomes(passed=2)
    stdout = result.stdout.str()
    assert "SetupShow1234567890" not in stdout
    assert "ExplicitId1234567890" not in stdout
    assert "SETUP    F key[[REDACTED]]" in stdout or "key['[REDACTED]']" in stdout
    assert "test_shown.py::test_explicit[[REDACTED]]" in stdout


# The credential forms beyond Bearer, Basic, password and api_key, in a kit test's
# failure, its output, its log and a tool's error: no output keeps the key.
FORMS = """
import logging
import os

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

KEY = os.environ["AF_FORM_VALUE"]
FORMS = {
    "token-scheme": f"Authorization: Token {KEY}",
    "apikey-scheme": f"[('Authorization', 'ApiKey {KEY}')]",
    "passwd": f"passwd={KEY}",
    "pwd": f"pwd: {KEY}",
    "private_key": f"private_key={KEY}",
    "PRIVATE_KEY": f"PRIVATE_KEY={KEY}",
    "DB_PASSWD": f"export DB_PASSWD={KEY}",
    "pem": f"-----BEGIN PRIVATE KEY-----\\\\n{KEY}\\\\n-----END PRIVATE KEY-----",
}


@af.tool
def login(account: str) -> str:
    \"\"\"Log in.\"\"\"
    return "ok"


@pytest.mark.parametrize("name", FORMS)
def test_form(name, faults):
    text = FORMS[name]
    faults.tool("login").raises(ConnectionError(f"refused {text}"))
    agent = af.Agent("bot", model=ScriptedModel([call_tool("login", account="a"), say("done")]),
                     tools=[login])
    agent.run("go")
    print(f"configured {text}")
    logging.getLogger("app").warning("sent %s", text)
    assert text == "", text
"""


def test_each_credential_form_reaches_no_output(pytester, monkeypatch):
    # no shape the rules know, in a variable named as no credential: not learned
    key = "gw" + secrets.token_hex(12)
    monkeypatch.setenv("AF_FORM_VALUE", key)
    pytester.makepyfile(test_forms=FORMS)
    out = pytester.path / "out"
    result = pytester.runpytest(
        "-rA",
        "-l",
        f"--junitxml={out / 'junit.xml'}",
        "-o",
        "junit_logging=all",
        f"--html={out / 'pytest-html.html'}",
        "--self-contained-html",
        f"--agentfaults-html={out / 'af.html'}",
        "--agentfaults-trace=always",
        f"--agentfaults-trace-dir={out / 'traces'}",
        f"--log-file={out / 'log.txt'}",
    )
    result.assert_outcomes(failed=8)
    texts = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    texts |= {path.name: path.read_text(encoding="utf-8") for path in out.rglob("*.*")}
    assert len(texts) == 2 + 4 + 8  # junit, both HTML reports, the log, a trace per test
    assert [where for where, text in texts.items() if key in text] == []
    assert texts["stdout"].count("[REDACTED]") >= 8 * 3
