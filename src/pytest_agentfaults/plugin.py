"""The pytest plugin (``pytest11`` entry point ``agentfaults``).

Markers ``inject_fault``, ``real_time`` and ``allow_network``; fixtures ``faults``, ``trace``,
``virtual_clock``, ``scripted_model``, ``http_faults``, ``llm_server``, ``openai_client``
(and ``async_openai_client``, ``anthropic_client``, ``async_anthropic_client``); options
``--agentfaults-trace``, ``--agentfaults-trace-dir``, ``--agentfaults-seed``,
``--agentfaults-update-snapshots``.

The hooks and fixtures are `_plugin_hooks`'s, named here, where pytest looks for them.
This module stays a few lines: pytest loads it through its assertion rewriter, which,
without a cache it can write (``PYTHONDONTWRITEBYTECODE``), compiles it from source in
every session. What it imports after `_plugin_unrewritten` loads as bytecode.
"""

from __future__ import annotations

import pytest_agentfaults._plugin_unrewritten  # noqa: F401 - first, for its effect (see its docs)
from pytest_agentfaults._plugin_hooks import *  # noqa: F403 - the hooks and fixtures pytest finds here
