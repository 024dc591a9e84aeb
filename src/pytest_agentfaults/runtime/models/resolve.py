"""`resolve_model`: ``"openai:gpt-4o-mini"``-style strings to model clients.

```python
resolve_model("openai:gpt-4o-mini")         # OpenAIModel, key from OPENAI_API_KEY
resolve_model("anthropic:claude-3-5-haiku-latest")
resolve_model("ollama:llama3.2:3b")          # everything after the first colon is the model
resolve_model(my_model)                      # any af.Model passes through
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.base import Model

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PREFIXES", "check_model_string", "resolve_model"]

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


def resolve_model(spec: str | Model) -> Model:
    """The `Model` that ``spec`` names: a ``"<prefix>:<model>"`` string, or a `Model` itself.

    Keys and hosts come from the usual environment variables (`PREFIXES`). Anything wrong
    (an unknown prefix, no model name, a missing key, a bad base URL) is a `UsageError`
    that names the fix, raised before any request is sent.
    """
    if isinstance(spec, str):
        prefix, name = check_model_string(spec)
        factory = _factory(prefix)
        assert factory is not None  # checked
        return factory(name)
    if isinstance(spec, Model):
        return spec
    raise UsageError(
        f"model={spec!r} is neither a model string such as 'openai:gpt-4o-mini' nor an object "
        "with the af.Model protocol (name, request(), arequest())"
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


def _factory(prefix: str) -> Callable[[str], Model] | None:
    # Imported here so that importing the runtime does not import every client (and httpx).
    if prefix == "openai":
        from pytest_agentfaults.runtime.models.openai import OpenAIModel  # noqa: PLC0415  # lazy: httpx

        return OpenAIModel
    if prefix == "anthropic":
        from pytest_agentfaults.runtime.models.anthropic import AnthropicModel  # noqa: PLC0415  # lazy: httpx

        return AnthropicModel
    if prefix == "ollama":
        from pytest_agentfaults.runtime.models.ollama import OllamaModel  # noqa: PLC0415  # lazy: httpx

        return OllamaModel
    return None


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
