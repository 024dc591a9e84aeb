"""Reports that are not a traceback carry no key either.

An audit's findings: a collection error (an ``ImportError`` a test module raised, quoting
its key), a fixture-lookup error (which shows the test's decorators, a key in a
``parametrize`` list among them) and an xfail's reason reached ``-rA`` and junit XML as
written: pytest keeps the first two in repr objects that are not dataclasses, and the
reason apart from the report's failure text.
"""

from __future__ import annotations

import secrets

import pytest

PROVIDER_KEY = "sk-proj-" + "CollectKey0123456789abcdEFGH"
GATEWAY_KEY = "gw_live_" + "8f2a9c1d4e7b3a6c"

IMPORTS = f"""
KEY = "{PROVIDER_KEY}"
raise ImportError(f"cannot configure the client with {{KEY}}")
"""

LOOKS_UP = f"""
import secrets

import pytest


@pytest.mark.parametrize("key", ["{PROVIDER_KEY}"])
def test_missing_fixture(key, no_such_fixture):
    pass
"""

XFAILS = f"""
import secrets

import pytest


@pytest.mark.xfail(reason="the provider refuses {PROVIDER_KEY}")
def test_plain_xfail():
    raise ValueError("refused")


def test_kit_xfail(faults):
    pytest.xfail("the gateway refuses Bearer {GATEWAY_KEY}")


@pytest.mark.xfail(reason="the provider refuses {PROVIDER_KEY}")
def test_plain_xpass():
    pass
"""


@pytest.mark.parametrize(
    ("source", "outcome"),
    [
        pytest.param(IMPORTS, {"errors": 1}, id="collection-error"),
        pytest.param(LOOKS_UP, {"errors": 1}, id="fixture-lookup-error"),
        pytest.param(XFAILS, {"xfailed": 2, "xpassed": 1}, id="xfail-reason"),
    ],
)
def test_a_key_in_a_report_that_is_no_traceback_is_redacted(pytester, source, outcome):
    pytester.makepyfile(test_keys=source)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-p", "no:randomly", "-rA", f"--junitxml={junit}")
    result.assert_outcomes(**outcome)
    texts = {"stdout": result.stdout.str(), "junit": junit.read_text(encoding="utf-8")}
    leaks = [where for where, text in texts.items() for key in (PROVIDER_KEY, GATEWAY_KEY)
             if key in text]  # fmt: skip
    assert leaks == []
    assert "[REDACTED]" in texts["stdout"]


def test_a_collection_error_in_a_session_that_learned_a_key_is_reported(pytester, monkeypatch):
    # a key in the environment (learned at the session's start) and a module that fails to
    # import: its CollectReport's location is a read-only property, and the session's end
    # used to crash assigning it (INTERNALERROR) instead of reporting the error
    monkeypatch.setenv("AF_COLLECT_KEY", GATEWAY_KEY)
    pytester.makepyfile(test_keys=IMPORTS)
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    result.assert_outcomes(errors=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest stops at a collection error
    assert PROVIDER_KEY not in result.stdout.str()


TOOL_QUOTES = f"""
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


@af.tool
def login(user: str, password: str) -> str:
    \"\"\"Log in.\"\"\"
    raise PermissionError(f"login refused for {{user}} with {{password}}")


def test_login(trace):
    model = ScriptedModel([call_tool("login", user="bob", password="{GATEWAY_KEY}"), say("no")])
    af.Agent("bot", model=model, tools=[login]).run("go")
    assert trace.count("tool.error") == 0


def test_a_later_plain_test():
    assert "{GATEWAY_KEY}" == "other"
"""


def test_a_credential_argument_a_tool_quotes_is_redacted(pytester):
    # The tool's arguments are shown redacted by name ({"password": "[REDACTED]"}); its
    # error quoting the same value must not show it either.
    pytester.makepyfile(test_tool=TOOL_QUOTES)
    out = pytester.path / "out"
    result = pytester.runpytest(
        "-p",
        "no:randomly",
        "-rA",
        f"--junitxml={out / 'junit.xml'}",
        f"--agentfaults-html={out / 'af.html'}",
        f"--agentfaults-trace-dir={out / 'traces'}",
    )
    result.assert_outcomes(failed=2)
    texts = {"stdout": result.stdout.str()}
    texts.update({path.name: path.read_text() for path in out.rglob("*") if path.is_file()})
    assert [where for where, text in texts.items() if GATEWAY_KEY in text] == []
    assert "login refused for bob with [REDACTED]" in texts["stdout"]


CUT = """
import os

import httpx
import secrets

import pytest

GW = os.environ["AF_GW"]


def test_a_sends(http_faults):
    http_faults.get("https://gw.example.test/v1/models").respond(200, json={})
    httpx.get("https://gw.example.test/v1/models", headers={"x-api-key": GW})


@pytest.mark.parametrize(("at", "tail"), [(100, 140), (110, 140), (150, 100), (150, 110)])
def test_b_holds_a_long_text(at, tail):
    # pytest shows a long local (-l) and an assertion's operands cut to their start and
    # end around "...": the key is across the cut, in neither part whole
    text = "z" * at + GW + "w" * tail
    assert text.startswith("w")
"""


def test_a_learned_key_that_pytest_cut_short_leaves_no_part(pytester, monkeypatch):
    # a random part with a digit in every two characters: a part of it on one side of the
    # cut holds a digit, which is what tells a key's part from a word (see the next test)
    secret = "".join(secrets.choice("abcdef") + str(secrets.randbelow(10)) for _ in range(12))
    monkeypatch.setenv("AF_GW", f"gw_live_{secret}")
    pytester.makepyfile(test_cut=CUT)
    result = pytester.runpytest("-p", "no:randomly", "-rA", "-l")
    result.assert_outcomes(passed=1, failed=4)
    stdout = result.stdout.str()
    slices = {secret[i : i + 6] for i in range(len(secret) - 5)}
    assert [piece for piece in slices if piece in stdout] == []
    assert "...[REDACTED]" in stdout


SHORTENED = """
import pytest


def test_an_unrelated_long_text():
    # pytest cuts this text's repr (-l, and the assertion's operand) to "'aaa...pytest_agent"
    # and "ting._clients bbb...'" around "...": a learned key starts with the one word and
    # ends with the other, and neither part is of that key
    text = "a" * 105 + "pytest_agent" + "m" * 40 + "ting._clients" + "b" * 105
    assert text.startswith("z")
"""


def test_a_word_a_learned_key_starts_or_ends_with_stays_in_a_cut_text(pytester, monkeypatch):
    # learned at the session's start (a name ending in _KEY): its first and last words are
    # the ones either side of an unrelated text's cut
    key = "agent" + "".join(secrets.choice("abcdef") + str(secrets.randbelow(10)) for _ in range(8))
    monkeypatch.setenv("AF_AGENT_KEY", key + "ting")
    pytester.makepyfile(test_shortened=SHORTENED)
    result = pytester.runpytest("-p", "no:randomly", "-rA", "-l")
    result.assert_outcomes(failed=1)
    stdout = result.stdout.str()
    assert "pytest_agent...ting._clients" in stdout
    assert "[REDACTED]" not in stdout


# A kit test's junit XML attribute, set with pytest's record_xml_attribute: a value with a
# bearer token is a credential by its context, as it is in the test's other reports.
XML_ATTRIBUTE = """
import pytest


def test_records(record_xml_attribute, trace):
    record_xml_attribute("auth", "Bearer " + "gw7Q2mX9vK4pL8nR3tY6")
"""


def test_a_kit_tests_junit_attribute_is_redacted(pytester):
    pytester.makepyfile(test_xml=XML_ATTRIBUTE)
    out = pytester.path / "junit.xml"
    # record_xml_attribute writes only in the xunit1 family (pytest warns in xunit2)
    result = pytester.runpytest(
        "-p", "no:randomly", f"--junitxml={out}", "-o", "junit_family=xunit1", "-W", "ignore"
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    text = out.read_text(encoding="utf-8")
    assert 'auth="Bearer [REDACTED]"' in text
    assert "gw7Q2mX9vK4pL8nR3tY6" not in text
