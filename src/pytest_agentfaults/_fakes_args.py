"""`fake_args`: a tool's arguments filled with realistic values that pass its validation."""

from __future__ import annotations

import json
import math
import random
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from faker import Faker

from pytest_agentfaults._fakes_foreign import Foreign, read_tool
from pytest_agentfaults._fakes_pattern import from_pattern
from pytest_agentfaults._fakes_schema import (
    KEYS,
    SCHEMES,
    check_fakeable,
    schema_for_fakes,
    unfakeable,
)
from pytest_agentfaults._fakes_times import bounded_temporal
from pytest_agentfaults._fakes_values import (
    FORMATS,
    RANGE_BY_NAME,
    STRING_BY_NAME,
    STRING_BY_SUFFIX,
    UUID_FORMAT,
    Make,
    sized_email,
    tokens,
    url_of,
)
from pytest_agentfaults.errors import InvalidArgsError, UsageError
from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["fake_args", "shared_faker"]

_MAX_DEPTH: Final = 4
_ATTEMPTS: Final = 25
_TEMPORAL: Final = ("date", "date-time", "time", "duration")
_default_faker: Faker | None = None


def fake_args(
    tool: object,
    *,
    seed: int | None = None,
    faker: Faker | None = None,
    include_optional: bool = True,
) -> dict[str, Any]:
    """Arguments for ``tool``, filled with realistic values, that pass ``tool.validate``.

    Values follow the field's name first (``url`` / ``website`` / ``link``, ``email``,
    ``name``, ``city``, ``country``, ``date``, ``created_at``, ``uuid`` / ``id``, ``phone``,
    ``query``, ``path`` ...) and its JSON schema second (type, ``format``, bounds, lengths,
    ``enum``, simple ``pattern`` s, arrays, nested objects), and the bounds pydantic keeps
    out of the schema (a date's ``gt`` / ``le``, ``FutureDate``, a dict's key type). The
    result is plain JSON data, checked as the JSON a model sends (so a strict model's date
    is text), so ``call_tool(tool.name, **fake_args(tool))`` works.

    ``seed`` makes the result reproducible (same seed, same arguments); with a ``faker``
    of your own (a locale, say), the seed reseeds it, and without a seed its current state
    is used. ``include_optional=False`` leaves out the parameters that have defaults.

    ```python
    @af.tool
    def book(city: str, email: str, nights: Annotated[int, Field(ge=1, le=14)]) -> str: ...

    fake_args(book, seed=3)   # {'city': 'Port Jenniferton', 'email': 'x@example.org', 'nights': 9}
    ```

    Paths checked against the disk (``FilePath``, ``DirectoryPath``, ``NewPath``) are not
    faked: an optional one is left out, a required one raises `UsageError` (pass that
    argument yourself). Raises `UsageError` too when no value that the tool accepts can be
    found (a pattern too hard to invert, say), naming the tool and what its validation said.

    ``tool`` may also be another framework's tool, filled from the JSON schema it gives
    its model and checked by its own validation where it has one: a plain function, a
    pydantic-ai ``Tool``, a LangChain tool, an OpenAI Agents SDK ``FunctionTool``, an MCP
    ``Tool``, an anthropic ``@beta_tool``, or a JSON schema itself.
    """
    found = read_tool(tool)
    if not isinstance(found, Tool):
        return _fake_foreign(found, _faker_for(seed, faker), include_optional)
    tool = found
    check_fakeable(tool, "fake_args()")
    left_out = set(unfakeable(tool))  # optional ones: their defaults stand
    fake = _faker_for(seed, faker)
    filler = _Filler(schema_for_fakes(tool), fake)
    last: InvalidArgsError | None = None
    for _ in range(_ATTEMPTS):
        args = filler.arguments(include_optional)
        for name in left_out:
            args.pop(name, None)
        try:
            # As the JSON a model sends: a strict model takes a date there as text, and
            # refuses the same text in Python.
            tool.validate(json.dumps(args))
        except InvalidArgsError as exc:
            last = exc
            continue
        return args
    raise UsageError(
        f"fake_args() found no valid arguments for tool {tool.name!r} in {_ATTEMPTS} tries; "
        f"the last were rejected with: {last}"
    )


def _fake_foreign(found: Foreign, fake: Faker, include_optional: bool) -> dict[str, Any]:
    """`fake_args` for another framework's tool: its schema filled, its own check passed."""
    name, schema, check = found
    filler = _Filler(schema, fake)
    last: Exception | None = None
    for _ in range(_ATTEMPTS):
        args = filler.arguments(include_optional)
        try:
            check(json.dumps(args))
        except Exception as exc:  # the framework's own validation error, whatever its type
            last = exc
            continue
        return args
    raise UsageError(
        f"fake_args() found no valid arguments for tool {name!r} in {_ATTEMPTS} tries; "
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
        if schema.get("contentMediaType") == "application/json":  # Json[...]: JSON as text
            return json.dumps(self.value(schema.get("contentSchema", {}), name, depth + 1))
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
            bounded = bounded_temporal(fmt, schema, self.rng) if fmt in _TEMPORAL else None
            if bounded is not None:
                return bounded
            schemes = schema.get(SCHEMES)
            if isinstance(schemes, list) and schemes:  # a DSN, a file URL: its own scheme
                candidates.append(lambda: url_of(self.fake, schemes))
            by_format = FORMATS.get(fmt)
            uuid_match = UUID_FORMAT.match(fmt)
            if by_format is not None:
                candidates.append(lambda: str(by_format(self.fake)))
            elif uuid_match:
                version = int(uuid_match.group(1) or 4)
                candidates.append(lambda: self.uuid(version))
            if fmt in ("email", "idn-email"):  # within the lengths when Faker's are not
                candidates.append(lambda: sized_email(self.rng, low, high))
        if isinstance(pattern, str):
            candidates.append(lambda: from_pattern(pattern, self.rng))
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

    def by_name(self, name: str) -> Make | None:
        key = tokens(name)
        found = STRING_BY_NAME.get(key)
        if found is not None:
            return found
        for suffix, make in STRING_BY_SUFFIX:
            if key.endswith(suffix):
                return make
        last = key.rsplit("_", 1)[-1]
        return STRING_BY_NAME.get(last)

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
        wanted = RANGE_BY_NAME.get(tokens(name)) or RANGE_BY_NAME.get(
            tokens(name).rsplit("_", 1)[-1]
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
        wanted = RANGE_BY_NAME.get(tokens(name)) or RANGE_BY_NAME.get(
            tokens(name).rsplit("_", 1)[-1]
        )
        low, high = _narrow(low, high, wanted, default=(0.0, 100.0))
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step > 0:
            return self.multiple(step, (low, high), (open_low, open_high))
        for _ in range(10):
            value = round(self.rng.uniform(low, high), 2)
            if _inside(value, low, high, open_low, open_high):
                return value
            value = self.rng.uniform(low, high)
            if _inside(value, low, high, open_low, open_high):
                return value
        return (low + high) / 2

    def multiple(
        self, step: float, bounds: tuple[float, float], open_ends: tuple[bool, bool]
    ) -> float:
        """A multiple of ``step`` in the bounds, with ``step``'s decimals (0.3, not 0.300...04)."""
        (low, high), (open_low, open_high) = bounds, open_ends
        first, last = math.ceil(low / step), math.floor(high / step)
        if open_low and first * step <= low:
            first += 1
        if open_high and last * step >= high:
            last -= 1
        places = max(0, -Decimal(str(step)).normalize().as_tuple().exponent)  # type: ignore[operator]
        return round(self.rng.randint(first, max(first, last)) * step, places)

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
        singular = name.removesuffix("s")
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
        extra = schema.get("additionalProperties", {} if not properties else None)
        if extra is True:  # dict[str, Any]
            extra = {}
        if isinstance(extra, Mapping) and not properties:
            keys = schema.get(KEYS)
            low = int(schema.get("minProperties", 1 if depth < _MAX_DEPTH else 0))
            high = int(schema.get("maxProperties", max(low, 3)))
            count = self.rng.randint(low, max(low, min(high, low + 3)))
            tries = 0
            while len(result) < count and tries < count * 10:
                tries += 1
                key = self.fake.word() if keys is None else self.key(keys)
                result.setdefault(key, self.value(extra, name, depth + 1))
        return result

    def key(self, schema: Mapping[str, Any]) -> str:
        """A dict key of ``schema``'s type (``dict[int, str]``), as JSON writes keys: text."""
        key = self.value(schema, "key", _MAX_DEPTH)
        return key if isinstance(key, str) else json.dumps(key)


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
