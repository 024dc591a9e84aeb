"""The recovery runtime: agents, tools, recovery policies, clocks, events.

Depends on pydantic, httpx and the standard library only: importing it never loads pytest,
respx, hypothesis or faker. Its public names are imported from `pytest_agentfaults`, their
one public path; this package re-exports nothing, so importing one of its modules (the
plugin's report redaction uses `redact`) loads only that module.
"""
