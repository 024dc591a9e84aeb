"""Hypothesis strategies for property-testing agents and their retry policies.

```python
from hypothesis import given
from hypothesis import strategies as st
import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst

@given(afst.resilience_configs(), st.integers(0, 2**32 - 1))
def test_schedules_obey_their_config(config, seed):
    af.check_schedule(config, config.schedule(seed=seed))

@given(afst.fault_plans(tools=["fetch"]), afst.scripts(tools=[fetch]))
def test_the_agent_survives(plan, steps):
    agent = af.Agent("bot", model=af.ScriptedModel(steps, on_exhausted="repeat_last"),
                     tools=[fetch], clock=af.VirtualClock())
    with plan.active():
        agent.run("go")
```

| strategy | yields |
|---|---|
| `resilience_configs` | valid `af.ResilienceConfig` objects |
| `fault_plans` | fresh `af.FaultPlan` objects with tool, llm (and http) faults |
| `tool_exceptions` | exception instances a tool might raise, by retryability |
| `http_faults` | keyword dicts for ``@pytest.mark.inject_fault(http=...)`` |
| `malformed_json` | almost-JSON strings that always fail `json.loads` |
| `scripts` | lists of `ScriptedModel` steps ending with a final ``say`` |

Every strategy shrinks towards a small, readable example: few faults, ``times=1``, the first
choice of each list (``ConnectionError``, HTTP 503, ``say('done')``). This module and its
private ``_strategy_*`` modules are the only ones of the package that import Hypothesis,
and nothing imports them at start-up.
"""

from __future__ import annotations

from pytest_agentfaults._strategy_configs import resilience_configs
from pytest_agentfaults._strategy_faults import fault_plans, http_faults, tool_exceptions
from pytest_agentfaults._strategy_printing import register_printers
from pytest_agentfaults._strategy_scripts import malformed_json, scripts
from pytest_agentfaults.testing._malformed import MALFORMED_JSON_KINDS

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "MALFORMED_JSON_KINDS",
    "fault_plans",
    "http_faults",
    "malformed_json",
    "resilience_configs",
    "scripts",
    "tool_exceptions",
]

register_printers()
