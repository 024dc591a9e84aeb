"""The same seed gives the same faults and the same trace files, byte for byte.

Nothing that changes from run to run (the loopback server's port, tmp paths, object ids,
process-wide counters) may reach ``faults.fired`` or the trace JSON of a virtual-time test.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("httpcore2")  # see test_http_plugin.py: loaded in the outer session
pytest.importorskip("httpx2")

SUITE = '''
import json
import os

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

API = "https://api.example.com/v1/things"


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


@af.tool
def lookup(key: str) -> str:
    """Look up."""
    return "found"


class Box:  # its default repr holds its address, different in every run
    pass


def dump(name, faults):
    fired = [[f.target, f.name, f.kind, f.occurrence, f.fault.describe()] for f in faults.fired]
    with open(os.path.join(os.environ["AF_OUT"], name + ".json"), "w") as out:
        json.dump(fired, out)


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
@pytest.mark.inject_fault(tool="fetch", delay=0.5, probability=0.5, times=3, strict=False)
@pytest.mark.inject_fault(tool="lookup", returns=Box())
def test_tool_faults_and_jitter(faults):
    steps = [call_tool("fetch", url="u"), call_tool("fetch", url="v"), call_tool("lookup", key="k")]
    agent = af.Agent("bot", model=ScriptedModel([*steps, say("done")]), tools=[fetch, lookup])
    assert agent.run("go").output == "done"
    dump("tool", faults)


@pytest.mark.inject_fault(http=503, times=2)
def test_http_faults(http_faults, faults):
    http_faults.get(API).respond(200)
    with httpx.Client() as client:
        assert [client.get(API + "?page=2").status_code for _ in range(3)] == [503, 503, 200]
    dump("http", faults)


@pytest.mark.inject_fault(http="reset", url="/v1/chat/completions", times=1)
@pytest.mark.inject_fault(http=429, retry_after=1, times=1)
def test_llm_server_faults(llm_server, faults):
    llm_server.script([call_tool("fetch", url="u"), say("done")])
    model = af.OpenAIModel(
        "m", base_url=llm_server.base_url("openai"), api_key="sk-key-0123456789"
    )
    with model:
        result = af.Agent("bot", model=model, tools=[fetch]).run("go")
    assert result.output == "done"
    faults.llm.server_error()
    with model, pytest.raises(af.ModelServerError):
        af.Agent("bot", model=model, tools=[fetch]).run("again")
    dump("llm_server", faults)
'''


def _run(pytester, monkeypatch, name: str, *, subprocess: bool) -> dict[str, bytes]:
    out = pytester.path / name
    out.mkdir()
    monkeypatch.setenv("AF_OUT", str(out))
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--agentfaults-seed=4242", f"--agentfaults-trace-dir={out / 'traces'}")
    result.assert_outcomes(passed=3)
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.json"))}
    assert len(files) == 6
    return files


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
def test_one_seed_gives_identical_fired_faults_and_trace_files(suite, monkeypatch, subprocess):
    pytester = suite(SUITE)
    first = _run(pytester, monkeypatch, "first", subprocess=subprocess)
    second = _run(pytester, monkeypatch, "second", subprocess=subprocess)
    assert first.keys() == second.keys()
    for name in first:
        if first[name] != second[name]:  # show the lines that differ
            assert first[name].decode().splitlines() == second[name].decode().splitlines(), name
    # The faults really fired, each kind of them, and jitter shaped the waits.
    fired = {name: json.loads(first[name]) for name in ("tool.json", "http.json")}
    assert len(fired["tool.json"]) >= 3
    assert ["tool", "lookup", "returns", 1, "tool 'lookup' returns <test_suite.Box object>"] in (
        fired["tool.json"]
    )
    assert len(fired["http.json"]) == 2
    server = json.loads(first["llm_server.json"])
    assert [f[0] for f in server] == ["http", "http", "llm"]
    assert all("127.0.0.1" not in f[1] for f in server)


def test_the_loopback_server_is_shown_as_a_stable_host(suite, monkeypatch):
    pytester = suite(SUITE)
    out = pytester.path / "out"
    out.mkdir()
    monkeypatch.setenv("AF_OUT", str(out))
    result = pytester.runpytest(f"--agentfaults-trace-dir={out / 'traces'}", "-k", "llm_server")
    result.assert_outcomes(passed=1, deselected=2)
    fired = json.loads((out / "llm_server.json").read_text())
    assert fired[0][1] == "POST http://llm_server/v1/chat/completions"
    (trace_file,) = (out / "traces").glob("*.json")
    data = json.loads(trace_file.read_text())
    urls = {e["url"] for e in data["events"] if "url" in e}
    assert urls == {"http://llm_server/v1/chat/completions"}
    assert data["faults_fired"][0]["name"] == "POST http://llm_server/v1/chat/completions"
