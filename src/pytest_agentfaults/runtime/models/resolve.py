"""`resolve_model`: ``"openai:gpt-4o-mini"``-style strings to model clients.

```python
resolve_model("openai:gpt-4o-mini")         # OpenAIModel, key from OPENAI_API_KEY
resolve_model("anthropic:claude-3-5-haiku-latest")
resolve_model("ollama:llama3.2:3b")          # everything after the first colon is the model
resolve_model(my_model)                      # any af.Model passes through
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models._model_string import PREFIXES, check_model_string
from pytest_agentfaults.runtime.models.base import Model

if TYPE_CHECKING:
    from collections.abc import Callable

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["PREFIXES", "check_model_string", "resolve_model"]


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


def _factory(prefix: str) -> Callable[[str], Model] | None:
    # Imported here so that importing the runtime does not import every client (and httpx);
    # no cycle: the clients reach `_model_string`, never this module.
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
