"""A small research assistant: search, fetch and summarise, with a recovery policy.

The tools read an in-memory "web" so the example runs anywhere, with no network and no
API key; swap `WEB` for real HTTP calls and the recovery policy stays the same.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field

import pytest_agentfaults as af

WEB: dict[str, str] = {
    "https://docs.example/retries": "Retries with backoff absorb transient failures.",
    "https://docs.example/timeouts": "Every attempt needs a deadline.",
}


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
    if url not in WEB:
        raise LookupError(f"404 for {url}")
    return WEB[url]


def clamp_words(raw: str) -> str:
    """A deterministic fixer (zero LLM calls): clamp max_words into the allowed range."""
    args = json.loads(raw)
    args["max_words"] = min(max(int(args.get("max_words", 8)), 1), 50)
    return json.dumps(args)


@af.tool(on_error=af.OnError(invalid_args=af.fix(af.Agent.from_function("clamp", clamp_words))))
def summarise(text: str, max_words: Annotated[int, Field(ge=1, le=50)] = 8) -> str:
    """Shorten a text to at most `max_words` words."""
    return " ".join(text.split()[:max_words])


def build_agent(model: af.Model, **options: object) -> af.Agent:
    """The assistant, wired with its tools and its recovery policy."""
    return af.Agent(
        "research-assistant",
        model=model,
        instructions="Answer from the docs. Cite the URL you used.",
        tools=[search, fetch, summarise],
        resilience=af.ResilienceConfig(max_retries=2, base_delay=0.5),
        budget=af.Budget(max_turns=8),
        **options,  # type: ignore[arg-type]
    )
