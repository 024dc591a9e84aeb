"""Which of a test's fixtures are the kit's: a suite's own fixture of the same name is not.

A test asking for the kit's ``trace``, ``faults``, ``virtual_clock``, ``http_faults``,
``llm_server``, ``scripted_model`` or an SDK client fixture uses the kit. A suite's own
fixture of one of those names (or a parametrized argument) hides ours: a test asking for
it alone is not a kit test, and a kit test given it is warned (`warn_shadowed`).

Light like ``plugin.py``: the standard library and pytest only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentfaults._plugin_given import AgentFaultsWarning

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["KIT_FIXTURES", "SDK_FIXTURES", "names_our_fixture", "our_fixture", "warn_shadowed"]

# The fixtures that read the test's state: asking for one means using the kit.
KIT_FIXTURES = frozenset(
    ("faults", "trace", "virtual_clock", "http_faults", "llm_server", "scripted_model")
)
# The official SDKs' clients (`_plugin_sdk`): kit fixtures too.
SDK_FIXTURES = frozenset(
    ("openai_client", "async_openai_client", "anthropic_client", "async_anthropic_client")
)
# Every name of a kit fixture; a user's own fixture of one of these names is not ours.
_NAMED = KIT_FIXTURES | SDK_FIXTURES
_OURS = frozenset(("pytest_agentfaults._plugin_hooks", "pytest_agentfaults._plugin_sdk"))


def names_our_fixture(item: pytest.Item) -> bool:
    """Whether the test asks for one of the kit's fixtures (not a user's of its name)."""
    names = getattr(item, "fixturenames", ())
    if _NAMED.isdisjoint(names):  # nearly every test of a suite: one set operation
        return False
    return any(our_fixture(item, name) for name in _NAMED.intersection(names))


def our_fixture(item: pytest.Item, name: str) -> bool:
    """Whether the fixture ``name`` of ``item`` is the kit's, or a user's built on it.

    A user's fixture of the same name (in a conftest, a module, a class) or a parametrized
    argument of that name hides ours: the test gets theirs, and does not use the kit. One
    that asks for the name itself (``def faults(faults): ...``) extends ours: it does.
    """
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a pytest function (no fixture information): by its name
        return name in getattr(item, "fixturenames", ())
    for definition in reversed(info.name2fixturedefs.get(name, ())):
        if getattr(definition.func, "__module__", "") in _OURS:
            return True
        if name not in definition.argnames:  # it does not build on the one it overrides
            return False
    return False


def warn_shadowed(item: pytest.Item) -> None:
    """Warn a test that uses the kit but gets a user's fixture of a kit fixture's name.

    Its waits, faults and trace are the kit's; the object it asked for by that name is
    not, and shows none of them (a suite's own ``virtual_clock`` from before the kit had
    one). Said once per test, as an `AgentFaultsWarning`, naming where that fixture is.
    """
    names = getattr(item, "fixturenames", ())
    if _NAMED.isdisjoint(names):
        return
    for name in sorted(_NAMED.intersection(names)):
        if our_fixture(item, name):
            continue
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.get(name, ()) if info is not None else ()
        where = _where(item, definitions[-1].func) if definitions else "a parametrized argument"
        item.warn(
            AgentFaultsWarning(
                f"{item.nodeid} uses the kit (an inject_fault marker or a kit fixture), but "
                f"its fixture {name!r} is not the kit's: it is {where}, and shows none of the "
                f"test's faults, trace or virtual waits. Rename yours, or build it on the "
                f"kit's: def {name}({name}): ..."
            )
        )


def _where(item: pytest.Item, func: Any) -> str:
    """Where a fixture's function is written, as pytest shows paths (or what it is)."""
    code = getattr(func, "__code__", None)
    if code is None or getattr(func, "__module__", "").startswith("_pytest"):
        return "a parametrized argument"
    path = Path(code.co_filename)
    try:
        shown = str(path.relative_to(item.config.rootpath))
    except ValueError:
        shown = str(path)
    return f"the one at {shown}:{code.co_firstlineno}"
