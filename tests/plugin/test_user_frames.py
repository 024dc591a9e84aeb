"""An error out of `agent.run` / `arun` or out of a marker's setup shows the user's line,
not the kit's frames (audit finding 10): pytest hides every kit frame on the way."""

from __future__ import annotations

import pytest


def _assert_only_user_frames(out: str) -> None:
    for line in out.splitlines():
        assert "pytest_agentfaults/" not in line, line
        assert "importlib/" not in line, line
        assert "site-packages" not in line, line


@pytest.mark.parametrize("tb", ["long", "short", "auto"])
def test_errors_out_of_a_run_show_the_users_line(suite, tb):
    pytester = suite("""
def test_exhausted():
    make([call_tool("fetch", url="u")]).run("go")

def test_called():
    make([call_tool("fetch", url="u")])("go")

@pytest.mark.asyncio
async def test_exhausted_async():
    await make([call_tool("fetch", url="u")]).arun("go")

@pytest.mark.inject_fault(llm="timeout")
def test_timeout():
    make().run("go")

def test_auth(llm_server):
    llm_server.script([af.fail.http(401)])
    model = af.OpenAIModel("m", base_url=llm_server.base_url("openai"), api_key="k")
    with model:
        af.Agent("bot", model=model).run("hi")

@pytest.mark.asyncio
async def test_auth_async(llm_server):
    llm_server.script([af.fail.http(401)])
    model = af.OpenAIModel("m", base_url=llm_server.base_url("openai"), api_key="k")
    async with model:
        await af.Agent("bot", model=model).arun("hi")
""")
    result = pytester.runpytest(f"--tb={tb}", "-p", "no:randomly")
    result.assert_outcomes(failed=6)
    out = result.stdout.str()
    _assert_only_user_frames(out)
    for line in (
        'make([call_tool("fetch", url="u")]).run("go")',
        'make([call_tool("fetch", url="u")])("go")',
        'await make([call_tool("fetch", url="u")]).arun("go")',
        'make().run("go")',
        'af.Agent("bot", model=model).run("hi")',
        'await af.Agent("bot", model=model).arun("hi")',
    ):
        assert line in out, line


@pytest.mark.parametrize("tb", ["long", "short"])
def test_marker_setup_errors_show_no_kit_or_importlib_frame(suite, tb):
    pytester = suite("""
import myapp_tools

@pytest.mark.inject_fault(http=999)
def test_status(http_faults):
    pass

@pytest.mark.inject_fault(function="myapp_tools:serch", raises=TimeoutError)
def test_attr_typo():
    myapp_tools.search("x")

@pytest.mark.inject_fault(function="myapp_tool:search", raises=TimeoutError)
def test_module_typo():
    myapp_tools.search("x")
""")
    pytester.makepyfile(myapp_tools="def search(query):\n    return 'found'\n")
    result = pytester.runpytest(f"--tb={tb}", "-p", "no:randomly")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    _assert_only_user_frames(out)
    assert "ModuleNotFoundError" not in out  # the typed error says it, once
    result.stdout.fnmatch_lines(
        [
            "*UsageError: test_suite.py:* (test_status): @pytest.mark.inject_fault(http=999): "
            "status needs an HTTP code*",
            "*UsageError: @pytest.mark.inject_fault(function='myapp_tools:serch'*"
            "'myapp_tools' has no attribute 'serch'*",
            "*UsageError: @pytest.mark.inject_fault(function='myapp_tool:search'*"
            "cannot import module 'myapp_tool'*",
        ]
    )


def test_a_module_that_fails_on_import_keeps_its_own_frames(suite):
    pytester = suite("""
@pytest.mark.inject_fault(function="broken_tools:search", raises=TimeoutError)
def test_broken():
    pass
""")
    pytester.makepyfile(broken_tools="import not_installed_dependency\n")
    result = pytester.runpytest("--tb=short", "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    # the user's module raised: its line is the cause, shown above the typed error
    result.stdout.fnmatch_lines(
        [
            "*import not_installed_dependency*",
            "*ModuleNotFoundError: No module named 'not_installed_dependency'",
            "*UsageError: *cannot import module 'broken_tools'*",
        ]
    )


@pytest.mark.parametrize("tb", ["long", "short"])
def test_a_refused_or_faulted_request_shows_the_client_not_the_kit(suite, tb):
    # The error comes out of the transport the kit hands the client: the frames shown are
    # the user's and the client library's, none of the kit's, and the crash line at the
    # end names the last of those, not the kit's file.
    pytester = suite("""
import httpx
import httpx2

def test_refused(trace):
    httpx.get("https://example.com/")

@pytest.mark.asyncio
async def test_refused_async(trace):
    async with httpx.AsyncClient() as client:
        await client.get("https://example.com/")

def test_refused_httpx2(trace):
    with httpx2.Client() as client:
        client.get("https://example.com/")

@pytest.mark.inject_fault(http="connect_error")
def test_connect_error(trace):
    httpx.get("https://api.test/")

@pytest.mark.inject_fault(http="timeout")
def test_timeout(trace):
    httpx.get("https://api.test/")

def test_unrouted(http_faults):
    http_faults.get("https://api.test/a").respond(200)
    httpx.get("https://api.test/b")

@pytest.mark.asyncio
async def test_unrouted_async(http_faults):
    http_faults.get("https://api.test/a").respond(200)
    async with httpx.AsyncClient() as client:
        await client.get("https://api.test/b")
""")
    result = pytester.runpytest(f"--tb={tb}", "-p", "no:randomly")
    result.assert_outcomes(failed=7)
    out = result.stdout.str()
    summary = out.index("short test summary info")
    for line in out[:summary].splitlines():
        assert "pytest_agentfaults/" not in line, line
        assert "<pytest_agentfaults." not in line, line  # a kit frame's `self = <...>`
    for line in (
        'httpx.get("https://example.com/")',
        'await client.get("https://example.com/")',
        'client.get("https://example.com/")',
        'httpx.get("https://api.test/")',
        'httpx.get("https://api.test/b")',
        'await client.get("https://api.test/b")',
    ):
        assert line in out, line
    if tb == "long":  # the fixture, an argument of the user's test, says what it holds
        assert "http_faults = <http_faults: 1 route, 0 calls>" in out


@pytest.mark.parametrize("tb", ["long", "short", "auto"])
def test_a_usage_error_from_deep_in_the_package_shows_only_the_users_line(suite, tb):
    # Each raised several kit frames down (a model string resolved to a client that needs
    # a key; a step builder's check): every module of the package hides its frames.
    pytester = suite("""
def test_model_string_without_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    af.Agent("bot", model="openai:gpt-4o-mini").run("hi")

def test_bad_step():
    af.ScriptedModel([say(123)])
""")
    result = pytester.runpytest(f"--tb={tb}", "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    _assert_only_user_frames(out[: out.index("short test summary info")])
    if tb == "long":  # the crash line names the user's line
        result.stdout.fnmatch_lines(["test_suite.py:*: UsageError", "test_suite.py:*: UsageError"])
    for line in (
        'af.Agent("bot", model="openai:gpt-4o-mini").run("hi")',
        "af.ScriptedModel([say(123)])",
    ):
        assert line in out, line
