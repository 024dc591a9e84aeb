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
reproduces and shrinks. This is the only module of the package that imports Faker.
"""

from __future__ import annotations

import importlib
import json
import math
import random
import re
import string
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from faker import Faker
from faker.providers import BaseProvider

from pytest_agentfaults.errors import InvalidArgsError, UsageError
from pytest_agentfaults.runtime.tools import Tool

__all__ = [
    "MALFORMED_JSON_KINDS",
    "PROVIDERS",
    "AgentFaultsProvider",
    "fake_args",
    "faker_with_provider",
    "shared_faker",
]

MALFORMED_JSON_KINDS: Final = (
    "trailing_comma",
    "single_quotes",
    "unquoted_keys",
    "python_literals",
    "markdown_fence",
    "prose",
    "truncated",
    "unbalanced",
    "missing_comma",
    "unescaped_quote",
    "comment",
    "two_objects",
)
"""The kinds of broken JSON `AgentFaultsProvider.malformed_json` writes: what models send."""

PROVIDERS: Final = ("openai", "anthropic", "ollama")
"""The providers `AgentFaultsProvider.provider_error_body` knows the error format of."""

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

        ``kind`` is one of `MALFORMED_JSON_KINDS` (a random one when None). Every result
        really fails `json.loads`.
        """
        chosen = self._choose(kind, MALFORMED_JSON_KINDS, "malformed_json")
        payload = self._arguments_payload()
        text = _break_json(chosen, payload, self.generator.random)
        if _parses(text):  # pragma: no cover - every kind above is built to fail
            text += "}"
        return text

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
        error_type, code, template = _ERRORS[provider][status]
        message = template.format(
            model=self.random_element(_MODELS[provider]),
            seconds=self.random_int(1, 60),
            limit=self.random_element((10_000, 30_000, 90_000, 200_000)),
            org=f"org-{self._token(24)}",
            tokens=self.random_int(130_000, 250_000),
        )
        if provider == "openai":
            body: dict[str, Any] = {
                "error": {"message": message, "type": error_type, "param": None, "code": code}
            }
        elif provider == "anthropic":
            body = {
                "type": "error",
                "error": {"type": error_type, "message": message},
                "request_id": f"req_{self._token(24)}",
            }
        else:
            body = {"error": message}
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
            ("date", fake.date),
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


# --------------------------------------------------------------------------- broken JSON


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _break_json(kind: str, payload: dict[str, Any], rng: random.Random) -> str:
    text = json.dumps(payload)
    keys = list(payload)
    if kind == "trailing_comma":
        return text[:-1] + ",}"
    if kind == "single_quotes":
        return text.replace('"', "'")
    if kind == "unquoted_keys":
        return "{" + ", ".join(f"{k}: {json.dumps(payload[k])}" for k in keys) + "}"
    if kind == "python_literals":
        shown = dict(payload)
        shown.setdefault("verbose", True)
        return repr(shown)
    if kind == "markdown_fence":
        return f"```json\n{json.dumps(payload, indent=2)}\n```"
    if kind == "prose":
        lead = rng.choice(
            ("Sure! Here are the arguments:", "Here is the JSON you asked for:", "Arguments:")
        )
        return f"{lead} {text}"
    if kind == "truncated":
        # Cut in the second half, where a model that ran out of tokens stops.
        return text[: rng.randint(len(text) // 2, len(text) - 2)]
    if kind == "unbalanced":
        return text + "}"
    if kind == "missing_comma":
        return "{" + " ".join(f"{json.dumps(k)}: {json.dumps(payload[k])}" for k in keys) + "}"
    if kind == "unescaped_quote":
        return text[:-1] + ', "note": "the user said "hurry" twice"}'
    if kind == "comment":
        return "{\n  // arguments for the tool\n" + text[1:]
    # two_objects
    return text + " " + json.dumps({keys[0]: payload[keys[0]]})


# --------------------------------------------------------------------------- provider errors

# provider -> status -> (error type, code, message template)
_ERRORS: Final[dict[str, dict[int, tuple[str, str | None, str]]]] = {
    "openai": {
        400: (
            "invalid_request_error",
            "context_length_exceeded",
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in {tokens} tokens. Please reduce the length of the messages.",
        ),
        401: (
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided: sk-proj-****. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
        ),
        404: (
            "invalid_request_error",
            "model_not_found",
            "The model `{model}` does not exist or you do not have access to it.",
        ),
        429: (
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached for {model} in organization {org} on tokens per min (TPM): "
            "Limit {limit}, Used {limit}, Requested 1200. Please try again in {seconds}s.",
        ),
        500: (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        503: (
            "server_error",
            None,
            "The engine is currently overloaded, please try again later.",
        ),
    },
    "anthropic": {
        400: (
            "invalid_request_error",
            None,
            "prompt is too long: {tokens} tokens > 200000 maximum",
        ),
        401: ("authentication_error", None, "invalid x-api-key"),
        403: (
            "permission_error",
            None,
            "Your API key does not have permission to use the specified resource.",
        ),
        404: ("not_found_error", None, "model: {model}"),
        413: ("request_too_large", None, "Request exceeds the maximum allowed number of bytes."),
        429: (
            "rate_limit_error",
            None,
            "This request would exceed the rate limit for your organization of {limit} input "
            "tokens per minute. Please retry after {seconds} seconds.",
        ),
        500: ("api_error", None, "Internal server error"),
        529: ("overloaded_error", None, "Overloaded"),
    },
    "ollama": {
        400: ("", None, "invalid options: unknown option {tokens}"),
        404: ("", None, 'model "{model}" not found, try pulling it first'),
        500: ("", None, "llama runner process has terminated: signal: killed"),
        503: ("", None, "server busy, please try again.  maximum pending requests exceeded"),
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


# --------------------------------------------------------------------------- fake_args

_MAX_DEPTH: Final = 4
_ATTEMPTS: Final = 25
_default_faker: Faker | None = None


def fake_args(
    tool: Tool[Any, Any],
    *,
    seed: int | None = None,
    faker: Faker | None = None,
    include_optional: bool = True,
) -> dict[str, Any]:
    """Arguments for ``tool``, filled with realistic values, that pass ``tool.validate``.

    Values follow the field's name first (``url`` / ``website`` / ``link``, ``email``,
    ``name``, ``city``, ``country``, ``date``, ``created_at``, ``uuid`` / ``id``, ``phone``,
    ``query``, ``path`` ...) and its JSON schema second (type, ``format``, bounds, lengths,
    ``enum``, simple ``pattern`` s, arrays, nested objects). The result is plain JSON data,
    so ``call_tool(tool.name, **fake_args(tool))`` works.

    ``seed`` makes the result reproducible (same seed, same arguments); with a ``faker``
    of your own (a locale, say), the seed reseeds it, and without a seed its current state
    is used. ``include_optional=False`` leaves out the parameters that have defaults.

    ```python
    @af.tool
    def book(city: str, email: str, nights: Annotated[int, Field(ge=1, le=14)]) -> str: ...

    fake_args(book, seed=3)   # {'city': 'Port Jenniferton', 'email': 'x@example.org', 'nights': 9}
    ```

    Raises `UsageError` when no value that the tool accepts can be found (a pattern too
    hard to invert, say), naming the tool and what its validation said.
    """
    if not isinstance(tool, Tool):
        raise UsageError(
            f"fake_args() takes an af.Tool (a function decorated with @tool), got {tool!r}"
        )
    fake = _faker_for(seed, faker)
    filler = _Filler(tool.parameters, fake)
    last: InvalidArgsError | None = None
    for _ in range(_ATTEMPTS):
        args = filler.arguments(include_optional)
        try:
            tool.validate(args)
        except InvalidArgsError as exc:
            last = exc
            continue
        return args
    raise UsageError(
        f"fake_args() found no valid arguments for tool {tool.name!r} in {_ATTEMPTS} tries; "
        f"the last were rejected with: {last}"
    )


def shared_faker() -> Faker:
    """The Faker that `fake_args` uses by default, built on first use (it takes ~1 s).

    The strategies call this when they are built, so the cost is paid once at collection
    and never inside a Hypothesis draw, where it would trip the too_slow health check.
    """
    global _default_faker
    if _default_faker is None:
        _default_faker = Faker("en_US")
    return _default_faker


def _faker_for(seed: int | None, faker: Faker | None) -> Faker:
    if faker is None:
        faker = shared_faker()
        # A Faker never seeded draws from a random source shared by every instance: seed
        # this one always, from the OS when no seed is given.
        faker.seed_instance(seed if seed is not None else random.SystemRandom().getrandbits(64))
    elif seed is not None:
        faker.seed_instance(seed)
    return faker


_Make = Callable[[Faker], Any]


def _sentence(words: int) -> _Make:
    return lambda fake: fake.sentence(nb_words=words).rstrip(".")


def _json_text(fake: Faker) -> str:
    return json.dumps({fake.word(): fake.word(), "count": fake.random_int(0, 9)})


# Field names (or their last word) -> a realistic string.
_STRING_BY_NAME: Final[dict[str, _Make]] = {
    "url": lambda fake: fake.url(),
    "uri": lambda fake: fake.url(),
    "website": lambda fake: fake.url(),
    "link": lambda fake: fake.url(),
    "href": lambda fake: fake.url(),
    "homepage": lambda fake: fake.url(),
    "endpoint": lambda fake: fake.uri(),
    "webhook": lambda fake: fake.uri(),
    "email": lambda fake: fake.email(),
    "mail": lambda fake: fake.email(),
    "first_name": lambda fake: fake.first_name(),
    "firstname": lambda fake: fake.first_name(),
    "given_name": lambda fake: fake.first_name(),
    "last_name": lambda fake: fake.last_name(),
    "lastname": lambda fake: fake.last_name(),
    "surname": lambda fake: fake.last_name(),
    "family_name": lambda fake: fake.last_name(),
    "name": lambda fake: fake.name(),
    "full_name": lambda fake: fake.name(),
    "author": lambda fake: fake.name(),
    "owner": lambda fake: fake.name(),
    "recipient": lambda fake: fake.name(),
    "username": lambda fake: fake.user_name(),
    "user": lambda fake: fake.user_name(),
    "login": lambda fake: fake.user_name(),
    "handle": lambda fake: fake.user_name(),
    "city": lambda fake: fake.city(),
    "town": lambda fake: fake.city(),
    "country": lambda fake: fake.country(),
    "country_code": lambda fake: fake.country_code(),
    "state": lambda fake: fake.state(),
    "region": lambda fake: fake.state(),
    "address": lambda fake: fake.street_address(),
    "street": lambda fake: fake.street_address(),
    "zip": lambda fake: fake.postcode(),
    "zipcode": lambda fake: fake.postcode(),
    "zip_code": lambda fake: fake.postcode(),
    "postcode": lambda fake: fake.postcode(),
    "postal_code": lambda fake: fake.postcode(),
    "date": lambda fake: fake.date(),
    "day": lambda fake: fake.date(),
    "birthday": lambda fake: fake.date_of_birth().isoformat(),
    "dob": lambda fake: fake.date_of_birth().isoformat(),
    "datetime": lambda fake: fake.iso8601(),
    "timestamp": lambda fake: fake.iso8601(),
    "time": lambda fake: fake.time(),
    "uuid": lambda fake: fake.uuid4(),
    "guid": lambda fake: fake.uuid4(),
    "id": lambda fake: fake.uuid4(),
    "phone": lambda fake: fake.phone_number(),
    "phone_number": lambda fake: fake.phone_number(),
    "mobile": lambda fake: fake.phone_number(),
    "telephone": lambda fake: fake.phone_number(),
    "query": _sentence(4),
    "q": _sentence(3),
    "search": _sentence(3),
    "question": lambda fake: fake.sentence(nb_words=6).rstrip(".") + "?",
    "prompt": _sentence(8),
    "keywords": _sentence(3),
    "term": lambda fake: fake.word(),
    "topic": _sentence(3),
    "path": lambda fake: fake.file_path(depth=2),
    "file": lambda fake: fake.file_path(depth=2),
    "filename": lambda fake: fake.file_name(),
    "file_name": lambda fake: fake.file_name(),
    "filepath": lambda fake: fake.file_path(depth=2),
    "file_path": lambda fake: fake.file_path(depth=2),
    "directory": lambda fake: "/" + "/".join(fake.words(nb=2)),
    "dir": lambda fake: "/" + "/".join(fake.words(nb=2)),
    "folder": lambda fake: "/" + "/".join(fake.words(nb=2)),
    "text": lambda fake: fake.sentence(nb_words=10),
    "content": lambda fake: fake.paragraph(nb_sentences=2),
    "body": lambda fake: fake.paragraph(nb_sentences=2),
    "message": lambda fake: fake.sentence(nb_words=8),
    "description": lambda fake: fake.sentence(nb_words=10),
    "summary": lambda fake: fake.sentence(nb_words=10),
    "comment": lambda fake: fake.sentence(nb_words=8),
    "note": lambda fake: fake.sentence(nb_words=6),
    "reason": lambda fake: fake.sentence(nb_words=6),
    "title": _sentence(4),
    "subject": _sentence(5),
    "headline": _sentence(6),
    "company": lambda fake: fake.company(),
    "organization": lambda fake: fake.company(),
    "organisation": lambda fake: fake.company(),
    "ip": lambda fake: fake.ipv4(),
    "ip_address": lambda fake: fake.ipv4(),
    "host": lambda fake: fake.hostname(),
    "hostname": lambda fake: fake.hostname(),
    "domain": lambda fake: fake.domain_name(),
    "language": lambda fake: fake.language_code(),
    "lang": lambda fake: fake.language_code(),
    "locale": lambda fake: fake.locale(),
    "currency": lambda fake: fake.currency_code(),
    "color": lambda fake: fake.color_name(),
    "colour": lambda fake: fake.color_name(),
    "job": lambda fake: fake.job(),
    "slug": lambda fake: fake.slug(),
    "password": lambda fake: fake.password(),
    "json": _json_text,
    "payload": _json_text,
    "sql": lambda fake: f"SELECT * FROM {fake.word()} LIMIT {fake.random_int(1, 50)}",
}

# Names that end like these (``created_at``, ``start_date``, ``user_id`` ...) -> a string.
_STRING_BY_SUFFIX: Final[tuple[tuple[str, _Make], ...]] = (
    ("_at", lambda fake: fake.iso8601()),
    ("_date", lambda fake: fake.date()),
    ("_time", lambda fake: fake.iso8601()),
    ("_id", lambda fake: fake.uuid4()),
    ("_url", lambda fake: fake.url()),
    ("_email", lambda fake: fake.email()),
    ("_name", lambda fake: fake.name()),
    ("_path", lambda fake: fake.file_path(depth=2)),
    ("_city", lambda fake: fake.city()),
)

# Field names -> a realistic range (lowest, highest) for integers and numbers.
_RANGE_BY_NAME: Final[dict[str, tuple[float, float]]] = {
    "age": (18, 90),
    "year": (1990, 2030),
    "month": (1, 12),
    "day": (1, 28),
    "hour": (0, 23),
    "minute": (0, 59),
    "second": (0, 59),
    "seconds": (1, 120),
    "port": (1024, 65535),
    "count": (1, 20),
    "limit": (1, 20),
    "n": (1, 10),
    "k": (1, 10),
    "top_k": (1, 10),
    "max_results": (1, 20),
    "size": (1, 50),
    "page": (1, 10),
    "page_size": (5, 50),
    "quantity": (1, 10),
    "qty": (1, 10),
    "nights": (1, 14),
    "id": (1, 10_000),
    "timeout": (1, 60),
    "retries": (0, 5),
    "priority": (1, 5),
    "rating": (1, 5),
    "stars": (1, 5),
    "percent": (0, 100),
    "percentage": (0, 100),
    "lat": (-90, 90),
    "latitude": (-90, 90),
    "lon": (-180, 180),
    "lng": (-180, 180),
    "longitude": (-180, 180),
    "price": (0.5, 500),
    "amount": (1, 1000),
    "cost": (0.5, 500),
    "total": (1, 1000),
    "temperature": (-20, 40),
    "score": (0, 1),
    "probability": (0, 1),
    "confidence": (0, 1),
    "ratio": (0, 1),
    "threshold": (0, 1),
    "weight": (0.1, 100),
}

_FORMATS: Final[dict[str, _Make]] = {
    "uri": lambda fake: fake.url(),
    "url": lambda fake: fake.url(),
    "iri": lambda fake: fake.url(),
    "uri-reference": lambda fake: fake.uri_path(),
    "email": lambda fake: fake.email(),
    "idn-email": lambda fake: fake.email(),
    "date": lambda fake: fake.date(),
    "date-time": lambda fake: fake.iso8601(),
    "time": lambda fake: fake.time(),
    "duration": lambda fake: f"PT{fake.random_int(1, 3600)}S",
    "ipv4": lambda fake: fake.ipv4(),
    "ipv6": lambda fake: fake.ipv6(),
    "ipvanyaddress": lambda fake: fake.ipv4(),
    "ipvanyinterface": lambda fake: fake.ipv4(network=True),
    "ipvanynetwork": lambda fake: fake.ipv4(network=True),
    "hostname": lambda fake: fake.hostname(),
    "path": lambda fake: fake.file_path(depth=2),
    "file-path": lambda fake: fake.file_path(depth=2),
    "password": lambda fake: fake.password(),
    "binary": lambda fake: fake.word(),
}

_UUID_FORMAT: Final = re.compile(r"uuid([1-8]?)$")


def _tokens(name: str) -> str:
    """``fileName`` / ``file-name`` / ``FILE_NAME`` -> ``file_name``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).replace("-", "_")
    return snake.lower()


class _Filler:
    """Fills one JSON schema with values from one Faker."""

    def __init__(self, schema: Mapping[str, Any], fake: Faker) -> None:
        self.root = schema
        self.fake = fake
        self.rng: random.Random = fake.random

    def arguments(self, include_optional: bool) -> dict[str, Any]:
        value = self.object(self.root, "", 0, include_optional=include_optional)
        return value if isinstance(value, dict) else {}

    # ------------------------------------------------------------------ dispatch

    def value(self, schema: Mapping[str, Any], name: str, depth: int) -> Any:
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(list(schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.choice(schema[key], name, depth)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(self.resolve(part))
            return self.value(merged, name, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            options = [t for t in kind if t != "null"] or ["null"]
            kind = self.rng.choice(options)
        if kind == "string":
            return self.string(schema, name)
        if kind == "integer":
            return self.integer(schema, name)
        if kind == "number":
            return self.number(schema, name)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            return self.array(schema, name, depth)
        if kind == "object" or "properties" in schema:
            return self.object(schema, name, depth, include_optional=depth < _MAX_DEPTH)
        # No type at all (Any): a plain word is a value every such field accepts.
        return self.fake.word()

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 20:
            reference = str(schema["$ref"])
            if not reference.startswith("#/"):
                raise UsageError(f"fake_args(): cannot follow the schema reference {reference!r}")
            target: Any = self.root
            for part in reference[2:].split("/"):
                target = target[part]
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **extra}
            seen += 1
        return schema

    def choice(self, options: Sequence[Mapping[str, Any]], name: str, depth: int) -> Any:
        resolved = [self.resolve(option) for option in options]
        concrete = [o for o in resolved if o.get("type") != "null"]
        # Optional[X]: nearly always X, as a model would send it. Among several types the
        # first is the natural one (pydantic lists a Decimal's number before its string).
        if concrete and (len(concrete) == len(resolved) or self.rng.random() < 0.9):
            chosen = concrete[0] if self.rng.random() < 0.8 else self.rng.choice(concrete)
            return self.value(chosen, name, depth)
        return None

    # ------------------------------------------------------------------ scalars

    def string(self, schema: Mapping[str, Any], name: str) -> str:
        low = int(schema.get("minLength", 0))
        high = schema.get("maxLength")
        high = None if high is None else int(high)
        pattern = schema.get("pattern")
        fmt = schema.get("format")
        candidates: list[Callable[[], str | None]] = []
        if isinstance(fmt, str):
            by_format = _FORMATS.get(fmt)
            uuid_match = _UUID_FORMAT.match(fmt)
            if by_format is not None:
                candidates.append(lambda: str(by_format(self.fake)))
            elif uuid_match:
                version = int(uuid_match.group(1) or 4)
                candidates.append(lambda: self.uuid(version))
        if isinstance(pattern, str):
            candidates.append(lambda: _from_pattern(pattern, self.rng))
        by_name = self.by_name(name)
        if by_name is not None and fmt is None:
            candidates.append(lambda: str(by_name(self.fake)))
        candidates.append(lambda: self.words(low, high))
        for make in candidates:
            for _ in range(3):
                text = make()
                if text is None:
                    break
                if _fits_string(text, low, high, pattern):
                    return text
        return self.words(low, high)

    def by_name(self, name: str) -> _Make | None:
        key = _tokens(name)
        found = _STRING_BY_NAME.get(key)
        if found is not None:
            return found
        for suffix, make in _STRING_BY_SUFFIX:
            if key.endswith(suffix):
                return make
        last = key.rsplit("_", 1)[-1]
        return _STRING_BY_NAME.get(last)

    def words(self, low: int, high: int | None) -> str:
        text = self.fake.word()
        while len(text) < low:
            text += " " + self.fake.word()
        if high is not None:
            text = text[:high]
        return text

    def uuid(self, version: int) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=version))

    def integer(self, schema: Mapping[str, Any], name: str) -> int:
        low, high = _int_bounds(schema)
        wanted = _RANGE_BY_NAME.get(_tokens(name)) or _RANGE_BY_NAME.get(
            _tokens(name).rsplit("_", 1)[-1]
        )
        low, high = _narrow(low, high, wanted, default=(0, 100))
        lo, hi = math.ceil(low), math.floor(high)
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step > 0:
            first, last = math.ceil(lo / step), math.floor(hi / step)
            if first <= last:
                return int(self.rng.randint(first, last) * step)
            return int(first * step)
        return self.rng.randint(lo, hi) if lo <= hi else lo

    def number(self, schema: Mapping[str, Any], name: str) -> float:
        low, high, open_low, open_high = _float_bounds(schema)
        wanted = _RANGE_BY_NAME.get(_tokens(name)) or _RANGE_BY_NAME.get(
            _tokens(name).rsplit("_", 1)[-1]
        )
        low, high = _narrow(low, high, wanted, default=(0.0, 100.0))
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step > 0:
            first, last = math.ceil(low / step), math.floor(high / step)
            return float(self.rng.randint(first, max(first, last)) * step)
        for _ in range(10):
            value = round(self.rng.uniform(low, high), 2)
            if _inside(value, low, high, open_low, open_high):
                return value
            value = self.rng.uniform(low, high)
            if _inside(value, low, high, open_low, open_high):
                return value
        return (low + high) / 2

    # ------------------------------------------------------------------ containers

    def array(self, schema: Mapping[str, Any], name: str, depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [self.value(item, name, depth + 1) for item in prefix]
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        preferred = 0 if depth >= _MAX_DEPTH else 3
        high = max(low, min(int(high), low + 3) if high is not None else max(low, preferred))
        count = self.rng.randint(max(low, 1 if depth < _MAX_DEPTH else 0), high) if high else low
        count = max(low, min(count, high))
        items_schema = schema.get("items", {})
        singular = name[:-1] if name.endswith("s") else name
        items: list[Any] = []
        unique = bool(schema.get("uniqueItems"))
        seen: set[str] = set()
        tries = 0
        while len(items) < count and tries < count * 10:
            tries += 1
            item = self.value(items_schema, singular, depth + 1)
            if unique:
                key = json.dumps(item, sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
            items.append(item)
        return items

    def object(
        self, schema: Mapping[str, Any], name: str, depth: int, *, include_optional: bool
    ) -> dict[str, Any]:
        schema = self.resolve(schema)
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        result: dict[str, Any] = {}
        for key, sub in properties.items():
            if key in required or include_optional:
                result[key] = self.value(sub, key, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and not properties:
            low = int(schema.get("minProperties", 1 if depth < _MAX_DEPTH else 0))
            high = int(schema.get("maxProperties", max(low, 3)))
            count = self.rng.randint(low, max(low, min(high, low + 3)))
            tries = 0
            while len(result) < count and tries < count * 10:
                tries += 1
                result.setdefault(self.fake.word(), self.value(extra, name, depth + 1))
        return result


def _fits_string(text: str, low: int, high: int | None, pattern: object) -> bool:
    if len(text) < low or (high is not None and len(text) > high):
        return False
    if not isinstance(pattern, str):
        return True
    try:
        return re.search(pattern, text) is not None
    except re.error:
        # A pattern Python cannot read (pydantic's Rust engine can): the tool's own
        # validation decides.
        return True


def _int_bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None]:
    low: float | None = schema.get("minimum")
    high: float | None = schema.get("maximum")
    if "exclusiveMinimum" in schema:
        bound = math.floor(schema["exclusiveMinimum"]) + 1
        low = bound if low is None else max(low, bound)
    if "exclusiveMaximum" in schema:
        bound = math.ceil(schema["exclusiveMaximum"]) - 1
        high = bound if high is None else min(high, bound)
    return low, high


def _float_bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None, bool, bool]:
    low: float | None = schema.get("minimum")
    high: float | None = schema.get("maximum")
    open_low = open_high = False
    if "exclusiveMinimum" in schema and (low is None or schema["exclusiveMinimum"] >= low):
        low, open_low = schema["exclusiveMinimum"], True
    if "exclusiveMaximum" in schema and (high is None or schema["exclusiveMaximum"] <= high):
        high, open_high = schema["exclusiveMaximum"], True
    return low, high, open_low, open_high


def _narrow(
    low: float | None,
    high: float | None,
    wanted: tuple[float, float] | None,
    *,
    default: tuple[float, float],
) -> tuple[float, float]:
    """The schema's bounds, narrowed to the realistic range for the name when they overlap."""
    span = default[1] - default[0]
    if low is None and high is None:
        low, high = wanted or default
    elif low is None:
        assert high is not None
        low = high - span
    elif high is None:
        high = low + span
    assert low is not None
    assert high is not None
    if wanted is not None and wanted[0] <= high and wanted[1] >= low:
        return max(low, wanted[0]), min(high, wanted[1])
    return low, high


def _inside(value: float, low: float, high: float, open_low: bool, open_high: bool) -> bool:
    above = value > low if open_low else value >= low
    below = value < high if open_high else value <= high
    return above and below


# --------------------------------------------------------------------------- patterns

_sre: Any = importlib.import_module("re._parser")
_PRINTABLE: Final = string.ascii_letters + string.digits
_CATEGORIES: Final = {
    "CATEGORY_DIGIT": string.digits,
    "CATEGORY_NOT_DIGIT": string.ascii_letters,
    "CATEGORY_WORD": string.ascii_letters + string.digits + "_",
    "CATEGORY_NOT_WORD": " -.,",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": _PRINTABLE,
}


class _Unsupported(Exception):
    """The pattern uses a construct this small inverter does not handle."""


def _from_pattern(pattern: str, rng: random.Random) -> str | None:
    r"""A string that fully matches ``pattern``, for the simple patterns schemas carry.

    Literals, classes (``[a-z]``, ``\d``, ``\w``), groups, alternation, anchors and
    repeats are handled; anything else (look-arounds, back-references) gives None.
    """
    try:
        parsed = _sre.parse(pattern)
        return _emit(parsed, rng)
    except (_Unsupported, re.error, RecursionError):
        return None


def _emit(parsed: Any, rng: random.Random) -> str:
    out: list[str] = []
    for op, av in parsed:
        kind = str(op)
        if kind == "LITERAL":
            out.append(chr(av))
        elif kind == "NOT_LITERAL":
            out.append(rng.choice([c for c in _PRINTABLE if ord(c) != av]))
        elif kind == "ANY":
            out.append(rng.choice(_PRINTABLE))
        elif kind == "IN":
            out.append(_from_class(av, rng))
        elif kind in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            high = low + 3 if high == _sre.MAXREPEAT else min(high, low + 3)
            out.extend(_emit(sub, rng) for _ in range(rng.randint(low, high)))
        elif kind in ("SUBPATTERN", "ATOMIC_GROUP"):
            out.append(_emit(av[-1], rng))
        elif kind == "BRANCH":
            out.append(_emit(rng.choice(av[1]), rng))
        elif kind == "AT":
            continue
        elif kind == "CATEGORY":
            out.append(rng.choice(_CATEGORIES.get(str(av), _PRINTABLE)))
        else:
            raise _Unsupported(kind)
    return "".join(out)


def _from_class(items: Any, rng: random.Random) -> str:
    allowed: list[str] = []
    negate = False
    for op, av in items:
        kind = str(op)
        if kind == "NEGATE":
            negate = True
        elif kind == "LITERAL":
            allowed.append(chr(av))
        elif kind == "RANGE":
            low, high = av
            allowed.extend(chr(c) for c in range(low, min(high, low + 200) + 1))
        elif kind == "CATEGORY":
            allowed.extend(_CATEGORIES.get(str(av), ""))
        else:
            raise _Unsupported(kind)
    if negate:
        allowed = [c for c in _PRINTABLE if c not in set(allowed)]
    if not allowed:
        raise _Unsupported("empty class")
    return rng.choice(allowed)
