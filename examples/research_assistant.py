"""A small research assistant: search, fetch and summarise, with a recovery policy.

The tools talk to an in-memory "web" so the example runs anywhere; swap `WEB` for real
HTTP calls and the recovery policy stays the same.
"""

from __future__ import annotations

import pytest_agentfaults as af

WEB: dict[str, str] = {
    "https://docs.example/retries": "Retries with backoff absorb transient failures.",
    "https://docs.example/timeouts": "Every attempt needs a deadline.",
}


class FlakyNetwork:
    """The tools' transport; a test can make it fail the next N calls."""

    def __init__(self) -> None:
        self.failures: list[BaseException] = []
        self.calls: list[str] = []

    def get(self, url: str) -> str:
        self.calls.append(url)
        if self.failures:
            raise self.failures.pop(0)
        if url not in WEB:
            raise LookupError(f"404 for {url}")
        return WEB[url]


network = FlakyNetwork()


@af.tool
def search(query: str) -> list[str] | af.ToolFailure:
    """Search the docs; returns matching URLs."""
    hits = [url for url in WEB if any(word in url for word in query.lower().split())]
    if not hits:
        return af.ToolFailure(
            error=f"no results for {query!r}", recommendations=["Use fewer words."]
        )
    return hits


@af.tool(on_error=af.OnError(execution=af.retry(max_attempts=3, strategy="exponential")))
def fetch(url: str) -> str:
    """Fetch one page."""
    return network.get(url)


@af.tool
def summarise(text: str, max_words: int = 8) -> str:
    """Shorten a text to at most `max_words` words."""
    return " ".join(text.split()[:max_words])


def build_agent(model: af.Model, **options: object) -> af.Agent:
    """The assistant, wired with its tools and the default recovery policy."""
    return af.Agent(
        "research-assistant",
        model=model,
        instructions="Answer from the docs. Cite the URL you used.",
        tools=[search, fetch, summarise],
        resilience=af.ResilienceConfig(max_retries=2, base_delay=0.5),
        budget=af.Budget(max_turns=8),
        **options,  # type: ignore[arg-type]
    )
