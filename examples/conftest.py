"""The examples run with the pytest-agentfaults plugin: virtual time, traces, faults."""
