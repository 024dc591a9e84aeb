"""Installing the plugin does not rewrite the reports of tests that never use the kit.

A test with no ``inject_fault`` marker and no kit fixture gets only the redaction that
cannot be wrong: a provider key's own shape (``sk-proj-...``) and the keys the session's
kit tests sent that look like keys. Its failure text reads as without the plugin.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("httpx2")

PLAIN = """
def parse(s):
    return dict(p.split("=", 1) for p in s.split("&"))


def test_query_parser():
    got = parse("user=bob&password=letmein")
    assert got == {"user": "bob", "password": "letmein2"}


def test_header_builder():
    h = {"Authorization": "Bearer abcdefghij1234"}
    assert h["Authorization"] == "Bearer abcdefghij12345"


def test_url():
    url = "https://example.test/v1/models?key=0123456789abcdef0123456789abcdef"
    assert url.endswith("?key=x")


def test_basic_url():
    print("token=abc123XYZ987 and https://bob:hunter2hunter2@db.test/x")
    assert False, "api_key=abcdef123456"
"""


def _failure_lines(result: pytest.RunResult) -> list[str]:
    """The report from its failures on: no duration, no object address (new each run)."""
    lines = result.outlines
    start = next(n for n, line in enumerate(lines) if "FAILURES" in line)
    return [
        re.sub(r"0x[0-9a-f]+", "0x", line)
        for line in lines[start:]
        if not re.search(r" in \d+\.\d+s", line)
    ]


def test_a_plain_test_fails_the_same_with_and_without_the_plugin(pytester):
    pytester.makepyfile(test_plain=PLAIN)
    options = ("-p", "no:randomly", "-rA", "-vv")
    with_plugin = pytester.runpytest_subprocess(*options)
    without = pytester.runpytest_subprocess(*options, "-p", "no:agentfaults")
    with_plugin.assert_outcomes(failed=4)
    without.assert_outcomes(failed=4)
    out = with_plugin.stdout.str()
    assert "'password': 'letmein'" in out
    assert "'Bearer abcdefghij1234'" in out
    assert "?key=0123456789abcdef0123456789abcdef" in out
    assert "https://bob:hunter2hunter2@db.test/x" in out
    assert "[REDACTED]" not in out
    assert _failure_lines(with_plugin) == _failure_lines(without)


PROVIDER_KEY = """
import os


def test_prints_a_provider_key():
    key = os.environ["AF_KEY"]
    print("the key is", key)
    assert key == "other", {"password": "letmein"}
"""


def test_a_provider_key_is_redacted_in_a_plain_test_too(pytester, monkeypatch):
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5q"
    monkeypatch.setenv("AF_KEY", key)
    pytester.makepyfile(test_key=PROVIDER_KEY)
    junit = pytester.path / "junit.xml"
    options = ("-p", "no:randomly", "-rA", "-l", f"--junitxml={junit}", "-o", "junit_logging=all")
    result = pytester.runpytest(*options)
    result.assert_outcomes(failed=1)
    texts = [result.stdout.str(), junit.read_text(encoding="utf-8")]
    for text in texts:
        assert key not in text
        assert "the key is [REDACTED]" in text
        assert "{'password': 'letmein'}" in text  # the context rules are off


LEARNED = """
import os

import httpx
import pytest

GATEWAY = os.environ["AF_GATEWAY"]


def test_1_kit_sends_creds(http_faults):
    http_faults.get("https://api.test/x").respond(200)
    httpx.get("https://api.test/x", auth=("admin", "password"), headers={"x-api-key": "12345678"})
    http_faults.get("https://api.test/y").respond(200)
    httpx.get("https://api.test/y", headers={"Authorization": "Bearer " + GATEWAY})


def test_2_unrelated_total():
    assert 12345679 == 12345678, "order total mismatch"


def test_3_unrelated_password_message():
    msg = "user must change the default password before login"
    assert "expired" in msg, msg


def test_4_prints_the_gateway_key():
    print("later:", GATEWAY)
    assert False
"""


@pytest.mark.parametrize("how", ["in-process", pytest.param("xdist", marks=pytest.mark.slow)])
def test_words_a_kit_test_sent_are_not_redacted_in_later_plain_tests(pytester, monkeypatch, how):
    gateway = "gw_live_8f2a9c1d4e"
    monkeypatch.setenv("AF_GATEWAY", gateway)
    pytester.makepyfile(test_learned=LEARNED)
    junit = pytester.path / "junit.xml"
    options = ["-p", "no:randomly", "-rA", f"--junitxml={junit}", "-o", "junit_logging=all"]
    if how == "xdist":  # one worker runs the file in order: it learns, then redacts
        result = pytester.runpytest_subprocess(*options, "-n", "2", "--dist=loadfile")
    else:
        result = pytester.runpytest(*options)
    result.assert_outcomes(passed=1, failed=3)
    for text in (result.stdout.str(), junit.read_text(encoding="utf-8")):
        assert "def test_3_unrelated_password_message():" in text
        assert "12345679 == 12345678" in text
        assert "the default password before login" in text
        assert gateway not in text  # a key-shaped value is still learned
        assert "later: [REDACTED]" in text


LOGGED = """
import logging

import pytest

log = logging.getLogger("app")


def test_plain_logs():
    log.warning("plain login password=letmein with sk-proj-Ab3dEf6hIj9kLm2nOp5q")


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError, strict=False)
def test_kit_logs():
    log.warning("kit login password=letmein2")
"""


def test_live_logs_and_the_log_file_follow_the_test_that_wrote_them(pytester):
    pytester.makepyfile(test_logged=LOGGED)
    log_file = pytester.path / "log.txt"
    result = pytester.runpytest(
        "-p", "no:randomly", "--log-cli-level=WARNING", f"--log-file={log_file}"
    )
    result.assert_outcomes(passed=2)
    for text in (result.stdout.str(), log_file.read_text(encoding="utf-8")):
        assert "plain login password=letmein with [REDACTED]" in text
        assert "kit login password=[REDACTED]" in text


def test_a_collection_error_gets_every_rule(pytester):
    # It belongs to no test, and the module that failed to import may hold a key.
    pytester.makepyfile(
        test_broken="""
        CONFIG = {"password": "letmein-but-longer"}
        raise RuntimeError(f"cannot start: password={CONFIG['password']!s}x password=hunter22")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "hunter22" not in text
    assert "password=[REDACTED]" in text
