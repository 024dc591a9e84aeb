"""The plugin's command-line options, ini settings and marker help (`plugin.py` registers them).

Light like ``plugin.py``: the standard library and pytest only.
"""

from __future__ import annotations

import pytest

from pytest_agentfaults._plugin_coverage import add_options as add_coverage_options

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["INJECT_FAULT", "REAL_TIME", "TRACE_MODES", "add_options"]

TRACE_MODES = ("on-failure", "always", "never")

INJECT_FAULT = (
    "inject_fault(tool=None, http=None, llm=None, function=None, *, raises=None, returns=None, "
    "delay=None, times=1, at=1, probability=None, strict=True, ...): inject a fault into a tool "
    "(tool='name', or function='pkg.module:attr', with raises=, returns= or delay=, and "
    "idempotent=), an HTTP request (http=503 / 429 / 'timeout' / 'connect_error' / "
    "'read_error' / 'reset' / 'malformed_body' / 'truncated_stream' / 'not_json' / "
    "'proxy_html' / 'stall' / 'slow_first_token' / 'context_length' / 'quota', optionally "
    "url=, method=, retry_after=, retry_after_format=, should_retry=, after=, status=, delay=) "
    "or a model call (llm='malformed_tool_args' / 'rate_limit' / 'server_error' / 'timeout' / "
    "'connection' / 'empty' / 'blocked' / 'unknown_tool' / 'not_json' / 'truncated', "
    "optionally retry_after=, status=, args=, name=, finish_reason=, text=, agent=). "
    "Exactly one target per marker; markers stack."
)
REAL_TIME = "real_time: run this test on real time instead of the virtual clock."


def add_options(parser: pytest.Parser) -> None:
    """The command-line options and their ini twins."""
    group = parser.getgroup("agentfaults", "agent fault injection (pytest-agentfaults)")
    group.addoption(
        "--agentfaults-trace",
        choices=TRACE_MODES,
        default=None,
        help="when to show each test's recovery trace: on-failure (default), always, never",
    )
    group.addoption(
        "--agentfaults-trace-dir",
        default=None,
        metavar="DIR",
        help="write one JSON trace per test into DIR",
    )
    group.addoption(
        "--agentfaults-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed jitter and probabilistic faults (default: a new random seed, printed)",
    )
    group.addoption(
        "--agentfaults-update-snapshots",
        action="store_true",
        default=False,
        help="rewrite golden traces checked by trace.assert_matches_snapshot()",
    )
    group.addoption(
        "--agentfaults-html",
        default=None,
        metavar="PATH",
        help="write an HTML report drawing every test's attempts, faults and waits",
    )
    add_coverage_options(parser, group)
    parser.addini("agentfaults_trace", "default for --agentfaults-trace", default="on-failure")
    parser.addini("agentfaults_html", "default for --agentfaults-html", default="")
    parser.addini("agentfaults_trace_dir", "default for --agentfaults-trace-dir", default="")
    parser.addini("agentfaults_seed", "default for --agentfaults-seed", default="")
    parser.addini(
        "agentfaults_network",
        "real hosts: kit (default: refused in tests that use the kit, socket.connect "
        "too), block (in every test) or allow",
        default="kit",
    )
