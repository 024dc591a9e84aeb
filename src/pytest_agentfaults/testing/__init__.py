"""The test kit: scripted models and steps for proving that an agent recovers.

```python
from pytest_agentfaults.testing import ScriptedModel, call_tool, fail, say

model = ScriptedModel([call_tool("fetch", url="https://x.test"), fail.http(503), say("done")])
```

Everything here may import the runtime, and never imports pytest. Lazy like the package:
importing one module of the kit (the plugin's `_scrub`) loads only that module. These names
are the same objects as `pytest_agentfaults`'s, whose path is the public one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentfaults.testing._fail_steps import fail
    from pytest_agentfaults.testing._malformed_steps import malformed
    from pytest_agentfaults.testing.faults import FaultPlan, FiredFault
    from pytest_agentfaults.testing.scope import FaultScope, fault_scope
    from pytest_agentfaults.testing.scripted import ScriptedModel, ScriptExhaustedError
    from pytest_agentfaults.testing.steps import Step, call_tool, call_tools, say

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "FaultPlan",
    "FaultScope",
    "FiredFault",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Step",
    "call_tool",
    "call_tools",
    "fail",
    "fault_scope",
    "malformed",
    "say",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'pytest_agentfaults.testing' has no attribute {name!r}")
    return getattr(importlib.import_module("pytest_agentfaults"), name)  # not cached: see there


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
