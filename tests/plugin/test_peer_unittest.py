"""unittest.TestCase classes beside the kit: ``inject_fault`` on a method or a class applies.

pytest runs a ``unittest.TestCase`` method as a test, with its markers. The faults must
fire, and the test's trace see the runs, in ``unittest.IsolatedAsyncioTestCase`` too,
whose test runs in a context it copies when the case is made (at collection): the plugin
hands it the test's context instead, or the faults never fire and the agent's runs reach
no trace.
"""

from __future__ import annotations

TESTS = """
import asyncio
import time
import unittest

class TestSync(unittest.TestCase):
    @pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
    def test_marker_on_a_method(self):
        result = make().run("go")
        self.assertEqual(result.output, "done")
        self.assertEqual(result.trace.retries("fetch"), 2)
        self.assertEqual(CALLS, ["u"])

    @pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
    def test_never_fired(self):
        pass

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
class TestMarkedClass(unittest.TestCase):
    def test_it(self):
        self.assertEqual(make().run("go").trace.retries("fetch"), 1)

class TestAsync(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        CALLS.clear()

    @pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
    async def test_marker_on_an_async_method(self):
        started = time.perf_counter()
        result = await make().arun("go")
        await asyncio.sleep(30)
        self.assertEqual(result.trace.retries("fetch"), 2)
        self.assertEqual(CALLS, ["u"])
        self.assertLess(time.perf_counter() - started, 5)   # backoff and sleep: virtual

    @pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), strict=False)
    async def test_a_lenient_fault_fires_too(self):
        result = await make().arun("go")
        self.assertEqual(result.trace.count("tool.fault"), 1)
"""


def test_inject_fault_applies_to_unittest_test_cases(suite):
    result = suite(TESTS).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of TestSync.test_never_fired*", "*fault on tool 'fetch' never fired*"]
    )
