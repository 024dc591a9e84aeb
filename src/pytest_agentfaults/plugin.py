"""The pytest plugin (``pytest11`` entry point ``agentfaults``).

Kept light: pytest imports this module at start-up for every session, so everything heavy
is imported inside hooks and fixtures.
"""

from __future__ import annotations
