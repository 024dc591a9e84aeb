"""Fake data for agent tests: broken JSON, provider error bodies, and realistic tool arguments.

```python
from faker import Faker
from pytest_agentfaults.fakes import AgentFaultsProvider, fake_args

fake = Faker()
fake.add_provider(AgentFaultsProvider)
fake.malformed_json()                       # '{"query": "weather in Paris",}'
fake.provider_error_body("anthropic", 529)  # '{"type": "error", "error": {"type": ...}}'
fake.tool_error_message("transient")        # 'Connection reset by peer while reading ...'

fake_args(fetch, seed=1)                    # {'url': 'https://www.smith.com/'}, valid
```

`fake_args` reads the tool's JSON schema and fills each field with a realistic value chosen by
the field's name (``url``, ``email``, ``city``, ``date``, ``uuid``, ``query`` ...) and its type
and constraints (``minimum`` / ``maximum``, lengths, ``enum``, simple ``pattern`` s, nested
models). The same seed gives the same arguments, so a Hypothesis test that draws the seed
reproduces and shrinks. This module and its private ``_fakes_*`` modules are the only ones
of the package that import Faker.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from faker import Faker
from faker.providers import BaseProvider

from pytest_agentfaults._fakes_args import fake_args, shared_faker
from pytest_agentfaults._fakes_values import DATES_END
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._malformed import (
    MALFORMED_JSON_KINDS,
    break_json,
    can_break,
    write,
)
from pytest_agentfaults.testing._wire import error_payload

if TYPE_CHECKING:
    from pytest_agentfaults.testing._wire import Provider

#: the providers whose error bodies `AgentFaultsProvider.provider_error_body` fakes
PROVIDERS: Final = ("openai", "anthropic", "ollama")

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "MALFORMED_JSON_KINDS",
    "PROVIDERS",
    "AgentFaultsProvider",
    "fake_args",
    "faker_with_provider",
    "shared_faker",
]

_TOOL_ERROR_KINDS: Final = ("transient", "permanent")


class AgentFaultsProvider(BaseProvider):
    """A Faker provider of the things that go wrong around an agent.

    ```python
    fake = Faker(); fake.add_provider(AgentFaultsProvider); fake.seed_instance(1)
    fake.malformed_json("trailing_comma")       # every result fails json.loads
    fake.provider_error_body("openai", 429)     # the JSON body OpenAI answers a 429 with
    fake.tool_error_message("permanent")        # 'Permission denied: /var/lib/...'
    ```
    """

    def malformed_json(self, kind: str | None = None) -> str:
        """Tool arguments as a model gets them wrong: almost JSON, never parseable.

        ``kind`` is one of `MALFORMED_JSON_KINDS` (a random one when None), the vocabulary
        `pytest_agentfaults.strategies.malformed_json` uses too. Every result really fails
        `json.loads`.
        """
        chosen = self._choose(kind, MALFORMED_JSON_KINDS, "malformed_json")
        payload = self._arguments_payload()
        if not can_break(chosen, payload):  # "undefined" needs a null to misspell
            payload["cursor"] = None
        # a truncation falls in the second half, where a model that ran out of tokens stops
        length = len(write(payload))
        cut = self.generator.random.randint(length // 2, length - 2) - 1
        return break_json(chosen, payload, cut)

    def provider_error_body(self, provider: str = "openai", status: int | None = None) -> str:
        """The JSON error body ``provider`` answers HTTP ``status`` with (random when None).

        ``provider`` is ``"openai"``, ``"anthropic"`` or ``"ollama"``; the shapes follow each
        API's documented error format (OpenAI ``{"error": {"message", "type", "param",
        "code"}}``, Anthropic ``{"type": "error", "error": {"type", "message"}}``, Ollama
        ``{"error": "..."}``).
        """
        if provider not in PROVIDERS:
            raise UsageError(
                f"provider_error_body(provider={provider!r}): use one of {', '.join(PROVIDERS)}"
            )
        statuses = tuple(_ERRORS[provider])
        if status is None:
            status = self.random_element(statuses)
        elif status not in _ERRORS[provider]:
            raise UsageError(
                f"provider_error_body({provider!r}, status={status!r}): known statuses are "
                f"{', '.join(map(str, statuses))}"
            )
        code, template = _ERRORS[provider][status]
        message = template.format(
            model=self.random_element(_MODELS[provider]),
            seconds=self.random_int(1, 60),
            limit=self.random_element((10_000, 30_000, 90_000, 200_000)),
            org=f"org-{self._token(24)}",
            tokens=self.random_int(130_000, 250_000),
        )
        request_id = f"req_{self._token(24)}" if provider == "anthropic" else None
        shape = cast("Provider", provider)  # checked against PROVIDERS above
        body = error_payload(shape, status, message, code=code, request_id=request_id)
        return json.dumps(body)

    def tool_error_message(self, kind: str | None = None) -> str:
        """A message a failing tool raises with: ``"transient"`` or ``"permanent"``.

        Transient messages read like network or overload trouble (the runtime's `classify`
        sees them as retryable even on a plain `Exception`); permanent ones like bad input,
        a missing file or a refused permission.
        """
        chosen = self._choose(kind, _TOOL_ERROR_KINDS, "tool_error_message")
        fake = self.generator
        templates = _TRANSIENT_MESSAGES if chosen == "transient" else _PERMANENT_MESSAGES
        return str(self.random_element(templates)).format(
            host=fake.hostname(),
            domain=fake.domain_name(),
            path=fake.file_path(depth=3),
            port=self.random_element((443, 5432, 6379, 8080)),
            seconds=self.random_element((5, 10, 30, 60)),
            field=fake.word(),
            value=fake.word(),
            user=fake.user_name(),
        )

    # ------------------------------------------------------------------ helpers

    def _choose(self, kind: str | None, kinds: Sequence[str], where: str) -> str:
        if kind is None:
            return str(self.random_element(kinds))
        if kind not in kinds:
            raise UsageError(f"{where}(kind={kind!r}): use one of {', '.join(kinds)}")
        return kind

    def _token(self, length: int) -> str:
        alphabet = string.ascii_letters + string.digits
        return "".join(self.generator.random.choice(alphabet) for _ in range(length))

    def _arguments_payload(self) -> dict[str, Any]:
        fake = self.generator
        fields: list[tuple[str, Callable[[], Any]]] = [
            ("query", lambda: fake.sentence(nb_words=4).rstrip(".")),
            ("url", fake.url),
            ("city", fake.city),
            ("limit", lambda: fake.random_int(1, 20)),
            ("email", fake.email),
            ("verbose", fake.pybool),
            ("path", lambda: fake.file_path(depth=2)),
            ("date", lambda: fake.date(end_datetime=DATES_END)),
            ("tags", lambda: fake.words(nb=2)),
            ("threshold", lambda: round(fake.random.uniform(0, 1), 2)),
            ("cursor", lambda: None),
        ]
        picked = fake.random.sample(fields, k=fake.random.randint(2, 4))
        return {name: make() for name, make in picked}


def faker_with_provider(seed: int | None = None, locale: str | None = None) -> Faker:
    """A new `Faker` with `AgentFaultsProvider` added, seeded when ``seed`` is given."""
    fake = Faker(locale)
    fake.add_provider(AgentFaultsProvider)
    if seed is not None:
        fake.seed_instance(seed)
    return fake


# --------------------------------------------------------------------------- provider errors

# provider -> status -> (OpenAI's error code, message template); the body's shape and error
# type come from the wire module, as the loopback server's do
_ERRORS: Final[dict[str, dict[int, tuple[str | None, str]]]] = {
    "openai": {
        400: (
            "context_length_exceeded",
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in {tokens} tokens. Please reduce the length of the messages.",
        ),
        401: (
            "invalid_api_key",
            "Incorrect API key provided: sk-proj-****. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
        ),
        404: (
            "model_not_found",
            "The model `{model}` does not exist or you do not have access to it.",
        ),
        429: (
            "rate_limit_exceeded",
            "Rate limit reached for {model} in organization {org} on tokens per min (TPM): "
            "Limit {limit}, Used {limit}, Requested 1200. Please try again in {seconds}s.",
        ),
        500: (
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        503: (
            None,
            "The engine is currently overloaded, please try again later.",
        ),
    },
    "anthropic": {
        400: (
            None,
            "prompt is too long: {tokens} tokens > 200000 maximum",
        ),
        401: (None, "invalid x-api-key"),
        403: (
            None,
            "Your API key does not have permission to use the specified resource.",
        ),
        404: (None, "model: {model}"),
        413: (None, "Request exceeds the maximum allowed number of bytes."),
        429: (
            None,
            "This request would exceed the rate limit for your organization of {limit} input "
            "tokens per minute. Please retry after {seconds} seconds.",
        ),
        500: (None, "Internal server error"),
        529: (None, "Overloaded"),
    },
    "ollama": {
        400: (None, "invalid options: unknown option {tokens}"),
        404: (None, 'model "{model}" not found, try pulling it first'),
        500: (None, "llama runner process has terminated: signal: killed"),
        503: (None, "server busy, please try again.  maximum pending requests exceeded"),
    },
}

_MODELS: Final = {
    "openai": ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "o3-mini"),
    "anthropic": ("claude-3-5-haiku-latest", "claude-sonnet-4-20250514", "claude-opus-4-1"),
    "ollama": ("llama3.1:8b", "qwen2.5:7b", "mistral:latest"),
}

_TRANSIENT_MESSAGES: Final = (
    "Connection reset by peer while reading from {host}:{port}",
    "HTTPSConnectionPool(host='{host}', port={port}): Read timed out. (read timeout={seconds})",
    "503 Service Unavailable from https://{domain}/api/v1",
    "Rate limit exceeded for {domain}; retry in {seconds}s",
    "Too many requests: {domain} allows 60 requests per minute",
    "upstream {host} is temporarily unavailable",
    "connection refused by {host}:{port}",
    "The service is overloaded; try again in {seconds} seconds",
)

_PERMANENT_MESSAGES: Final = (
    "No such file or directory: '{path}'",
    "Permission denied: '{path}'",
    "invalid value {value!r} for field '{field}': expected an integer",
    "missing required field '{field}'",
    "user '{user}' not found",
    "401 Unauthorized: invalid API key for {domain}",
    "unsupported format '{value}'; use one of: csv, json",
    "'{field}' must be at most 100 characters",
)
