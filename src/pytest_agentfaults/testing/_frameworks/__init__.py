"""Tool faults for other frameworks' agents: the adapters and the registry that loads them.

`ADAPTERS` maps a framework's top-level module name (as in `sys.modules`) to the adapter
that hooks its tool path, ``"<module>:install"``. ``install()`` patches the framework and
returns the undo. `install_adapters` installs the adapters of the frameworks the test
process has already imported, and of each other one as it is first imported while they
are on: nothing here imports a framework, and an adapter imports its framework inside
``install()`` only.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

from pytest_agentfaults._framework_files import distribution_of, ships
from pytest_agentfaults.runtime._arrival import ModuleArrival
from pytest_agentfaults.testing._undo import raise_together, run_all

if TYPE_CHECKING:
    from types import ModuleType

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ADAPTERS",
    "FRAMEWORK_OF",
    "Unhookable",
    "adapters_watching",
    "imported_late",
    "install_adapters",
    "not_watched",
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


#: while adapters installed in this context are on (by the test, or a fault_scope): the
#: live list of the frameworks they hook, which grows as one arrives
_installed: ContextVar[list[str] | None] = ContextVar("agentfaults_adapters", default=None)


def adapters_watching() -> list[str] | None:
    """The live list of what the adapters on in this context watch, or None if none are on."""
    return _installed.get()


def watched_names(watched: list[str]) -> list[str]:
    """``watched`` (modules, and ``"agentfaults"``) as their ``framework`` names, each once.

    As an unfired tool fault's message shows them: ``"agentfaults"`` is ``af.Agent``.
    """
    names = (FRAMEWORK_OF.get(module, module) for module in watched)
    return list(dict.fromkeys("af.Agent" if n == "agentfaults" else n for n in names))


def not_watched(watched: list[str] | None) -> str:
    """For a never-fired tool fault: the frameworks imported that the adapters do not hook.

    The adapters hook the frameworks imported when the test (or the fault_scope) starts,
    and each one imported by an ``import`` while it runs. One loaded past the import
    system (a module made from its file by hand) ran its tools unwatched, which no other
    line explains. ``watched`` is the test's or scope's live list (framework modules, and
    ``"agentfaults"`` for af.Agent's own tools); None for a plan used by hand, which
    installed no adapter and has nothing to say here.
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
            f"\n  {', '.join(late)} {'was' if len(late) == 1 else 'were'} loaded where the "
            "kit could not see it (not by an import while the test ran), so its tools were "
            "not watched: import it at the top of the test module (or in conftest.py)"
        )
    return "".join(lines)


def imported_late(watched: list[str] | None) -> list[str]:
    """The frameworks imported that ``watched`` (a test's or scope's list) lacks: unwatched."""
    if watched is None:
        return []
    return [module for module in _unwatched(watched) if module not in _unhookable]


def _unwatched(watched: list[str]) -> list[str]:
    return [module for module in ADAPTERS if module not in watched and _is_framework(module)]


#: framework module -> (the module last judged, whether it is the framework's): one look per
#: module object, not per test
_judged: dict[str, tuple[ModuleType, bool]] = {}


def _is_framework(module: str) -> bool:
    """Whether ``sys.modules[module]`` is the framework's own, not a package of the user's.

    ``agents`` and ``mcp`` are common names for a project's own package, which shadows the
    framework's (pytest puts the project first on ``sys.path``). The framework's module is
    the file its distribution installed; where the distribution keeps no file beside its
    metadata (an editable install of the framework), the name decides.
    """
    found = sys.modules.get(module)
    if found is None:
        return False
    judged = _judged.get(module)
    if judged is not None and judged[0] is found:
        return judged[1]
    verdict = _installed_by_distribution(module, found)
    _judged[module] = (found, verdict)
    return verdict


def _installed_by_distribution(module: str, found: ModuleType) -> bool:
    distribution = distribution_of(module)  # none installed: the user's module
    file = getattr(found, "__file__", None)
    return distribution is not None and ships(distribution, module, file)


def install_adapters(
    watched: list[str] | None = None,
) -> tuple[list[str], Callable[[], None]]:
    """Install the adapter of every supported framework imported, now or while it is on.

    The frameworks the test process has imported are hooked at once; every other one as
    it is first imported while the adapters are on (a test that imports its app, and with
    it pydantic-ai, in its body), by a `ModuleArrival` that the undo takes out. Returns
    ``watched`` (a new list if None), to which the module of each framework hooked is
    added, then and as one arrives (`watched_names` gives their ``framework`` names), and
    the undo, which removes every adapter installed here, whatever fails. If one install
    fails, those already done are undone before the error goes on.
    """
    __tracebackhide__ = True
    watched = [] if watched is None else watched
    undos: list[Callable[[], None]] = []
    lock = threading.Lock()  # a framework may arrive on another thread as the test ends
    live = [True]
    late: list[str] = []
    try:
        if not ADAPTERS.keys().isdisjoint(sys.modules.keys()):  # C, over ADAPTERS
            for module in ADAPTERS:
                if module not in sys.modules:
                    late.append(module)
                elif _is_framework(module):
                    _install(module, undos, watched)
        else:  # the usual test: no framework imported yet
            late.extend(ADAPTERS)
    except BaseException:
        raise_together(run_all(reversed(undos)), "undoing the framework adapters failed")
        raise

    def arrived(framework: ModuleType) -> None:
        __tracebackhide__ = True
        with lock:
            if not live[0] or not _is_framework(framework.__name__):
                return
            try:
                _install(framework.__name__, undos, watched)
            except Exception as error:
                error.add_note(
                    f"pytest-agentfaults could not hook {framework.__name__}, imported while "
                    "a test that uses the kit ran"
                )
                raise

    arrival = ModuleArrival(late, arrived) if late else None
    if arrival is not None:
        arrival.start()
    token = _installed.set(watched)

    def undo() -> None:
        if arrival is not None:
            arrival.stop()
        with lock:
            live[0] = False
            steps, undos[:] = list(reversed(undos)), []
        errors = run_all(steps)
        try:
            _installed.reset(token)
        except ValueError:  # undone in another context than installed: leave it be
            pass
        raise_together(errors, "undoing the framework adapters failed")

    return watched, undo


def _install(module: str, undos: list[Callable[[], None]], watched: list[str]) -> None:
    """Install ``module``'s adapter: its undo to ``undos``, its framework to ``watched``."""
    __tracebackhide__ = True
    adapter, _, name = ADAPTERS[module].partition(":")
    install: Callable[[], Callable[[], None]] = getattr(importlib.import_module(adapter), name)
    try:
        undos.append(install())
    except Unhookable as why:  # its tools run unwatched; the fault message says why
        _unhookable[module] = str(why)
        return
    _unhookable.pop(module, None)
    watched.append(module)
