"""Tool faults for other frameworks' agents: the adapters and the registry that loads them.

`ADAPTERS` maps a framework's top-level module name (as in `sys.modules`) to the adapter
that hooks its tool path, ``"<module>:install"``. ``install()`` patches the framework and
returns the undo. `install_adapters` installs the adapters of the frameworks the test
process has already imported, and no other: nothing here imports a framework, and an
adapter imports its framework inside ``install()`` only.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Final

from pytest_agentfaults.testing._undo import raise_together, run_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ADAPTERS",
    "FRAMEWORK_OF",
    "Unhookable",
    "adapters_installed",
    "imported_late",
    "install_adapters",
    "not_watched",
    "watched_modules",
    "watched_names",
]

_HERE: Final = "pytest_agentfaults.testing._frameworks"

#: framework module (as imported by the user) -> ``"adapter module:install"``
ADAPTERS: dict[str, str] = {
    "pydantic_ai": f"{_HERE}.pydantic_ai:install",
    "langchain_core": f"{_HERE}.langchain:install",
    "agents": f"{_HERE}.openai_agents:install",
    "mcp": f"{_HERE}.mcp:install",
    "anthropic": f"{_HERE}.anthropic:install",
    "google.genai": f"{_HERE}.google_genai:install",
    # the SDK's tool runner, not the SDK: a test that imports only openai installs nothing
    "openai.lib.responses_tool_runner": f"{_HERE}.openai_runner:install",
    "openai.lib.decisions_tool_runner": f"{_HERE}.openai_decisions:install",
}

#: framework module -> the ``framework`` field its tool events carry
FRAMEWORK_OF: dict[str, str] = {
    "pydantic_ai": "pydantic_ai",
    "langchain_core": "langchain",
    "langchain": "langchain",
    "langgraph": "langchain",
    "agents": "openai_agents",
    "mcp": "mcp",
    "anthropic": "anthropic",
    "google.genai": "google_genai",
    "openai.lib.responses_tool_runner": "openai",
    "openai.lib.decisions_tool_runner": "openai",
}


class Unhookable(Exception):
    """Raised by an adapter's ``install`` when its framework lacks what it hooks.

    A version of the framework that moved or renamed the method: its tools run unwatched,
    and a tool fault's message says so, with this text, rather than name it as watched.
    """

    def __init__(self, missing: str) -> None:
        super().__init__(f"{missing}; put a function= fault on the function the tool calls instead")


#: framework module -> why the last `install_adapters` could not hook it
_unhookable: dict[str, str] = {}


#: set while adapters installed in this context are on (by the test, or a fault_scope)
_installed: ContextVar[bool] = ContextVar("agentfaults_adapters", default=False)


def adapters_installed() -> bool:
    """Whether this context's test (or an enclosing ``fault_scope``) installed adapters."""
    return _installed.get()


def watched_modules() -> list[str]:
    """The framework modules whose tools the adapters reach: those imported and hooked.

    Modules, not ``framework`` names: two modules may share a name (the openai SDK's two
    runners are both ``"openai"``), and one of them imported late is unwatched all the same.
    """
    return [m for m in ADAPTERS if m in sys.modules and m not in _unhookable]


def watched_names(watched: list[str]) -> list[str]:
    """``watched`` (modules, and ``"agentfaults"``) as their ``framework`` names, each once.

    As an unfired tool fault's message shows them: ``"agentfaults"`` is ``af.Agent``.
    """
    names = (FRAMEWORK_OF.get(module, module) for module in watched)
    return list(dict.fromkeys("af.Agent" if n == "agentfaults" else n for n in names))


def not_watched(watched: list[str] | None) -> str:
    """For a never-fired tool fault: the frameworks imported since the adapters went in.

    The adapters hook the frameworks imported when the test (or the fault_scope) starts;
    one imported inside the test ran its tools unwatched, which no other line explains.
    ``watched`` is what the test or scope started with (`watched_modules`, and
    ``"agentfaults"`` for af.Agent's own tools); None for a plan used by hand,
    which installed no adapter and has nothing to say here.
    """
    if watched is None:
        return ""
    lines = [
        f"\n  {module} is imported, but its tools could not be hooked: {_unhookable[module]}"
        for module in _unwatched(watched)
        if module in _unhookable
    ]
    late = imported_late(watched)
    if late:
        lines.append(
            f"\n  {', '.join(late)} {'was' if len(late) == 1 else 'were'} imported after the "
            "test started, so its tools were not watched: import it at the top of the test "
            "module (or in conftest.py)"
        )
    return "".join(lines)


def imported_late(watched: list[str] | None) -> list[str]:
    """The frameworks imported since the test (or scope) started with ``watched``: unwatched."""
    if watched is None:
        return []
    return [module for module in _unwatched(watched) if module not in _unhookable]


def _unwatched(watched: list[str]) -> list[str]:
    return [module for module in ADAPTERS if module in sys.modules and module not in watched]


def install_adapters() -> tuple[list[str], Callable[[], None] | None]:
    """Install the adapter of every supported framework already imported.

    Returns the framework modules now watched (`watched_modules`; `watched_names` gives
    their ``framework`` field values) and the undo, which removes every adapter installed
    here, whatever fails; None when no supported framework is imported (nothing to undo:
    the usual test).
    If one install fails, those already done are undone before the error goes on.
    """
    __tracebackhide__ = True
    if ADAPTERS.keys().isdisjoint(sys.modules.keys()):  # C, over ADAPTERS: every test asks
        return [], None
    watched: list[str] = []
    undos: list[Callable[[], None]] = []
    try:
        for module, target in ADAPTERS.items():
            if module not in sys.modules:
                continue
            adapter, _, name = target.partition(":")
            install: Callable[[], Callable[[], None]] = getattr(
                importlib.import_module(adapter), name
            )
            try:
                undos.append(install())
            except Unhookable as why:  # its tools run unwatched; the fault message says why
                _unhookable[module] = str(why)
                continue
            _unhookable.pop(module, None)
            watched.append(module)
    except BaseException:
        raise_together(run_all(reversed(undos)), "undoing the framework adapters failed")
        raise

    token = _installed.set(True)

    def undo() -> None:
        steps, undos[:] = list(reversed(undos)), []
        errors = run_all(steps)
        try:
            _installed.reset(token)
        except ValueError:  # undone in another context than installed: leave it be
            pass
        raise_together(errors, "undoing the framework adapters failed")

    return watched, undo
