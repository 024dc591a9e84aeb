"""Two of the kit's patches of one name unwind to the original in any undo order.

Virtual time patches ``time.sleep``; a ``function=`` fault may patch it too, before or
after. Whichever undo runs first, nothing of either survives, and a wrapper left covered
at its undo passes calls straight through (`pytest_agentfaults._patches`).
"""

from __future__ import annotations

import itertools
import time

import pytest

from pytest_agentfaults._patches import live, replaced, retire, retired
from pytest_agentfaults.runtime._virtual_time import ThreadTime
from pytest_agentfaults.runtime.clock import VirtualClock, read_default_clock
from pytest_agentfaults.testing._frameworks.function import patch_function


def _virtual_time() -> tuple[str, object]:
    thread_time = ThreadTime(VirtualClock(), read_default_clock)
    thread_time.install()
    return "virtual time", thread_time.uninstall


def _function_fault() -> tuple[str, object]:
    return "function fault", patch_function("time:sleep", "test")


@pytest.mark.real_time  # the test stacks the patches itself
@pytest.mark.parametrize("first", [_virtual_time, _function_fault])
@pytest.mark.parametrize("undo_first_made_first", [True, False])
def test_stacked_patches_unwind_to_the_original(first, undo_first_made_first):
    original = time.sleep
    second = _function_fault if first is _virtual_time else _virtual_time
    made = [first(), second()]
    assert time.sleep is not original
    order = made if undo_first_made_first else made[::-1]
    for _, undo in order:
        undo()  # type: ignore[operator]
    assert time.sleep is original


def test_a_retired_wrapper_is_skipped_by_whoever_puts_it_back():
    def original() -> str:
        return "original"

    def inner() -> str:
        return "inner"

    def outer() -> str:
        return "outer"

    replaced(inner, original)
    replaced(outer, inner)
    assert live(outer) is outer  # in place: put back as it is
    retire(inner)
    assert retired(inner)
    assert live(inner) is original
    retire(outer)
    assert live(outer) is original  # past every retired one


def test_marking_a_wrapper_clears_a_retired_flag_it_copied():
    def original() -> None: ...

    retire(original)
    wrapper = replaced(lambda: None, original)
    wrapper.__dict__.update(original.__dict__)  # as functools.wraps copies it
    assert retired(replaced(wrapper, original)) is False


def test_every_order_of_three_undos_of_two_names(monkeypatch):
    # the HTTP layer's send patch and a function fault on it, plus virtual time
    import httpx

    from pytest_agentfaults.testing import _clients

    class Layer:
        def handle(self, library, client, request, original):
            return original(client, request)

        async def ahandle(self, library, client, request, original):
            return await original(client, request)

    send, sleep = httpx.Client._send_single_request, time.sleep
    for order in itertools.permutations(range(3)):
        layer = Layer()
        _clients.push(layer)
        undos = [
            lambda layer=layer: _clients.remove(layer),
            patch_function("httpx:Client._send_single_request", "test"),
            _virtual_time()[1],
        ]
        for index in order:
            undos[index]()  # type: ignore[operator]
        assert httpx.Client._send_single_request is send, order
        assert time.sleep is sleep, order


@pytest.mark.real_time  # the test's own TestState makes the sleep virtual
@pytest.mark.parametrize("virtual_first", [True, False], ids=["virtual-first", "fault-first"])
def test_a_tests_sleep_fault_and_virtual_time_are_undone_when_a_teardown_step_raises(
    monkeypatch, virtual_first
):
    # A marker's function="time:sleep" fault and the test's virtual time, switched on in
    # either order, with a teardown step between their undos that raises: both undone.
    from pytest_agentfaults.testing._fault import ToolFault
    from pytest_agentfaults.testing.session import TestState

    original = time.sleep
    state = TestState("t.py::test_it", seed=1, real_time=False)
    state.add_faults([ToolFault(tool="time:sleep", function=True, raises=ConnectionError("x"))])
    steps = [state.use_virtual_time, state.start]
    for step in steps if virtual_first else steps[::-1]:
        step()
    layer = state.plan.http_layer()
    stop = layer.stop

    def stop_fails() -> None:
        stop()  # switched off all the same: nothing of it may outlive this test
        raise RuntimeError("the HTTP layer failed to stop")

    monkeypatch.setattr(layer, "stop", stop_fails)
    if virtual_first:  # the fault is on top, and fires
        with pytest.raises(ConnectionError):
            time.sleep(5)
    errors = state.stop()
    assert [repr(error) for error in errors] == ["RuntimeError('the HTTP layer failed to stop')"]
    assert time.sleep is original
