"""pytest_agentfaults.fakes: the Faker provider and fake_args()."""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

import pytest
from faker import Faker
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import UUID1, BaseModel, Field, HttpUrl

import pytest_agentfaults as af
from pytest_agentfaults.errors import _TRANSIENT_PATTERNS
from pytest_agentfaults.fakes import (
    MALFORMED_JSON_KINDS,
    PROVIDERS,
    AgentFaultsProvider,
    fake_args,
    faker_with_provider,
)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- the provider


@pytest.fixture
def fake() -> Faker:
    return faker_with_provider(seed=1234)


@SETTINGS
@given(seeds, st.sampled_from((None, *MALFORMED_JSON_KINDS)))
def test_malformed_json_never_parses(seed: int, kind: str | None) -> None:
    text = faker_with_provider(seed).malformed_json(kind)
    assert not parses(text), text


def test_malformed_json_is_reproducible_and_varied() -> None:
    first = [faker_with_provider(7).malformed_json() for _ in range(2)]
    assert first[0] == first[1]
    fake = faker_with_provider(7)
    assert len({fake.malformed_json() for _ in range(30)}) > 20


def test_the_provider_plugs_into_any_faker() -> None:
    fake = Faker("de_DE")
    fake.add_provider(AgentFaultsProvider)
    fake.seed_instance(3)
    assert not parses(fake.malformed_json("markdown_fence"))
    assert fake.malformed_json("markdown_fence").startswith("```json\n")


@SETTINGS
@given(seeds, st.sampled_from(PROVIDERS))
def test_provider_error_bodies_are_each_providers_json(seed: int, provider: str) -> None:
    body = json.loads(faker_with_provider(seed).provider_error_body(provider))
    if provider == "openai":
        assert set(body["error"]) == {"message", "type", "param", "code"}
    elif provider == "anthropic":
        assert body["type"] == "error"
        assert set(body["error"]) == {"type", "message"}
        assert body["request_id"].startswith("req_")
    else:
        assert isinstance(body["error"], str)


def test_provider_error_bodies_follow_the_status(fake: Faker) -> None:
    assert json.loads(fake.provider_error_body("anthropic", 529))["error"]["type"] == (
        "overloaded_error"
    )
    openai = json.loads(fake.provider_error_body("openai", 429))["error"]
    assert openai["code"] == "rate_limit_exceeded"
    assert "Rate limit reached" in openai["message"]
    assert "not found" in json.loads(fake.provider_error_body("ollama", 404))["error"]


def test_provider_error_body_rejects_what_it_does_not_know(fake: Faker) -> None:
    with pytest.raises(af.UsageError, match="provider"):
        fake.provider_error_body("gemini")
    with pytest.raises(af.UsageError, match="known statuses"):
        fake.provider_error_body("openai", 529)


@SETTINGS
@given(seeds)
def test_transient_tool_errors_read_as_transient(seed: int) -> None:
    message = faker_with_provider(seed).tool_error_message("transient")
    assert af.classify(Exception(message)).retryable, message


@SETTINGS
@given(seeds)
def test_permanent_tool_errors_do_not(seed: int) -> None:
    message = faker_with_provider(seed).tool_error_message("permanent")
    assert not _TRANSIENT_PATTERNS.search(message), message


def test_tool_error_message_rejects_an_unknown_kind(fake: Faker) -> None:
    with pytest.raises(af.UsageError, match="transient, permanent"):
        fake.tool_error_message("sometimes")


# --------------------------------------------------------------------------- fake_args


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    city: str
    zip_code: Annotated[str, Field(pattern=r"^\d{5}$")]


class Node(BaseModel):
    name: str
    children: list[Node] = []


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return url


@af.tool
def count_keys(json: str) -> int:
    """Count the keys of a JSON object."""
    return len(__import__("json").loads(json))


@af.tool
def book_hotel(
    city: str,
    check_in: datetime.date,
    nights: Annotated[int, Field(ge=1, le=14)],
    guest_email: str,
    guest_name: str,
    room: Literal["single", "double", "suite"] = "double",
    budget: Annotated[float, Field(gt=0, lt=500)] | None = None,
) -> str:
    """Book a hotel."""
    return city


@af.tool
def create_user(
    first_name: str,
    last_name: str,
    email: str,
    phone: str,
    website: HttpUrl,
    address: Address,
    tags: Annotated[list[str], Field(min_length=1, max_length=3)],
    user_id: uuid.UUID,
    created_at: datetime.datetime,
    favourite: Color = Color.RED,
) -> str:
    """Create a user."""
    return first_name


@af.tool
def search(
    query: Annotated[str, Field(min_length=3, max_length=40)],
    limit: Annotated[int, Field(gt=0, le=50, multiple_of=5)] = 10,
    lat: float = 0.0,
    lon: float = 0.0,
    filters: dict[str, int] | None = None,
) -> list[str]:
    """Search."""
    return [query]


@af.tool
def odd_types(
    pair: tuple[int, str],
    unique: set[int],
    price: Decimal,
    code: Annotated[str, Field(pattern=r"^[A-Z]{2}-\d{3}(x|yz)?$")],
    short: Annotated[str, Field(min_length=2, max_length=4)],
    batch: UUID1,
    anything: Any,
    ratio: Annotated[float, Field(ge=0.25, le=0.5, multiple_of=0.25)] = 0.25,
    tree: Node | None = None,
) -> str:
    """Everything awkward at once."""
    return code


@af.tool
def no_arguments() -> str:
    """Nothing to fill."""
    return "ok"


TOOLS = [fetch, count_keys, book_hotel, create_user, search, odd_types, no_arguments]


@SETTINGS
@given(st.sampled_from(TOOLS), seeds, st.booleans())
def test_fake_args_always_validate(tool: af.Tool, seed: int, optional: bool) -> None:
    args = fake_args(tool, seed=seed, include_optional=optional)
    tool.validate(args)
    tool.validate(json.dumps(args))  # plain JSON data: a model could have sent it
    assert fake_args(tool, seed=seed, include_optional=optional) == args


def test_fake_args_fill_fields_by_name() -> None:
    user = fake_args(create_user, seed=1)
    assert "@" in user["email"]
    assert urlparse(user["website"]).scheme in ("http", "https")
    assert uuid.UUID(user["user_id"])
    assert datetime.datetime.fromisoformat(user["created_at"])
    assert user["first_name"].isalpha()
    assert len(user["address"]["zip_code"]) == 5
    assert user["favourite"] in ("red", "blue")
    hotel = fake_args(book_hotel, seed=1)
    assert datetime.date.fromisoformat(hotel["check_in"])
    assert 1 <= hotel["nights"] <= 14
    assert "@" in hotel["guest_email"]
    assert " " in hotel["guest_name"]
    assert urlparse(fake_args(fetch, seed=1)["url"]).netloc
    assert isinstance(json.loads(fake_args(count_keys, seed=1)["json"]), dict)


def test_fake_args_respect_numeric_constraints() -> None:
    for seed in range(30):
        args = fake_args(search, seed=seed)
        assert args["limit"] % 5 == 0
        assert 0 < args["limit"] <= 50
        assert -90 <= args["lat"] <= 90
        assert -180 <= args["lon"] <= 180
        assert 3 <= len(args["query"]) <= 40


def test_fake_args_leave_out_optional_parameters_when_asked() -> None:
    assert set(fake_args(search, seed=1, include_optional=False)) == {"query"}
    assert set(fake_args(search, seed=1)) == {"query", "limit", "lat", "lon", "filters"}
    assert fake_args(no_arguments, seed=1) == {}


def test_fake_args_use_a_faker_of_your_own() -> None:
    french = Faker("fr_FR")
    first = fake_args(book_hotel, seed=5, faker=french)
    assert fake_args(book_hotel, seed=5, faker=Faker("fr_FR")) == first
    book_hotel.validate(first)
    unseeded = fake_args(book_hotel, faker=french)  # the faker's own state
    book_hotel.validate(unseeded)


def test_fake_args_without_a_seed_vary() -> None:
    assert len({json.dumps(fake_args(create_user)) for _ in range(5)}) > 1


def test_fake_args_say_when_a_pattern_is_out_of_reach() -> None:
    @af.tool
    def greet(word: Annotated[str, Field(pattern=r"^\p{Greek}{3}$")]) -> str:
        """Greet in Greek."""
        return word

    with pytest.raises(af.UsageError, match="greet"):
        fake_args(greet, seed=1)


def test_fake_args_take_a_tool() -> None:
    with pytest.raises(af.UsageError, match="takes a tool: an af.Tool, a function"):
        fake_args(object())
    # a function is read as @af.tool reads it: one without hints says what to add
    with pytest.raises(af.UsageError, match="parameter 'url' has no type hint"):
        fake_args(lambda url: url)


def test_fake_args_do_not_depend_on_the_day_they_run(monkeypatch) -> None:
    # Faker draws dates up to "now" unless told otherwise: the same seed then gave other
    # dates a moment later (created_at differed by microseconds), a flaky property above.
    import faker.providers.date_time as faker_dates

    class Frozen(datetime.datetime):
        moment = datetime.datetime(2026, 1, 1)

        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return cls.moment

    monkeypatch.setattr(faker_dates, "datetime", Frozen)
    first = [fake_args(tool, seed=334, include_optional=True) for tool in TOOLS]
    Frozen.moment = datetime.datetime(2031, 6, 1, 12, 0, 0, 123456)
    assert [fake_args(tool, seed=334, include_optional=True) for tool in TOOLS] == first
