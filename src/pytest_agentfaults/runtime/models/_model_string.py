"""The form of a ``"<prefix>:<model>"`` model string, checked without making a client.

A leaf of the models package: `ResilienceConfig` checks its fallback strings when it is
built (`backoff`), and `resolve_model` makes the client a string names (`resolve`), which
imports the clients, whose transport retry imports `backoff`. Kept apart, neither
needs the other.
"""

from __future__ import annotations

from typing import Final

from pytest_agentfaults.errors import UsageError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["PREFIXES", "check_model_string"]

#: The prefixes a model string may start with, and the environment each one reads.
PREFIXES: Final = {
    "anthropic": "AnthropicModel (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)",
    "ollama": "OllamaModel (OLLAMA_HOST)",
    "openai": "OpenAIModel (OPENAI_API_KEY, OPENAI_BASE_URL)",
}
_GUESSES: Final = (
    (("gpt", "o1", "o3", "o4", "chatgpt", "text-"), "openai"),
    (("claude",), "anthropic"),
    (("llama", "qwen", "mistral", "gemma", "phi", "deepseek"), "ollama"),
)


def check_model_string(spec: str) -> tuple[str, str]:
    """The provider prefix and the model name of a ``"<prefix>:<model>"`` string.

    Its form only: nothing is imported or read from the environment, so a config can check
    a model string when it is built (a missing key is found when the model is made).
    """
    prefix, colon, name = spec.strip().partition(":")
    if not colon or prefix.lower() not in PREFIXES:
        raise UsageError(_unknown(spec, prefix if colon else ""))
    if not name.strip():
        raise UsageError(
            f"model string {spec!r} has no model name after {prefix + ':'!r}; "
            f"write it like {_example(prefix.lower())!r}"
        )
    return prefix.lower(), name.strip()


def _example(prefix: str) -> str:
    return {
        "openai": "openai:gpt-4o-mini",
        "anthropic": "anthropic:claude-3-5-haiku-latest",
        "ollama": "ollama:llama3.2",
    }.get(prefix, "openai:gpt-4o-mini")


def _unknown(spec: str, prefix: str) -> str:
    valid = ", ".join(f"'{p}:'" for p in sorted(PREFIXES))
    lowered = spec.strip().lower()
    guess = next((provider for starts, provider in _GUESSES if lowered.startswith(starts)), None)
    if prefix:
        head = f"unknown model prefix {prefix + ':'!r} in {spec!r}"
    else:
        head = f"model string {spec!r} has no provider prefix"
    advice = f"; did you mean {guess + ':' + spec.strip()!r}?" if guess and not prefix else ""
    return f"{head}; use one of {valid} (e.g. 'openai:gpt-4o-mini'), or pass a Model object{advice}"
