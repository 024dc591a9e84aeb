"""What `fake_args` fills a field with, by its name or its JSON-schema ``format``."""

from __future__ import annotations

import base64
import datetime  # noqa: ICN001 - named in full: dates and datetimes both
import json
import random
import re
import string
from collections.abc import Callable
from typing import Any, Final

from faker import Faker

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "FORMATS",
    "RANGE_BY_NAME",
    "STRING_BY_NAME",
    "STRING_BY_SUFFIX",
    "UUID_FORMAT",
    "Make",
    "sized_email",
    "tokens",
    "url_of",
]

Make = Callable[[Faker], Any]

# Faker draws dates up to "now" unless told an end: the same seed would give other dates on
# another day (or a microsecond later). A fixed end keeps fake_args a function of its seed.
DATES_END: Final = datetime.datetime(2025, 12, 31, 23, 59, 59)  # noqa: DTZ001 - Faker is naive
BIRTHS: Final = (datetime.date(1940, 1, 1), datetime.date(2007, 12, 31))


def _iso8601(fake: Faker) -> str:
    return fake.iso8601(end_datetime=DATES_END)


def _date(fake: Faker) -> str:
    return fake.date(end_datetime=DATES_END)


def _birth_date(fake: Faker) -> str:
    return fake.date_between(start_date=BIRTHS[0], end_date=BIRTHS[1]).isoformat()


def _time(fake: Faker) -> str:
    return fake.time(end_datetime=DATES_END)


def _sentence(words: int) -> Make:
    return lambda fake: fake.sentence(nb_words=words).rstrip(".")


def _json_text(fake: Faker) -> str:
    return json.dumps({fake.word(): fake.word(), "count": fake.random_int(0, 9)})


# Field names (or their last word) -> a realistic string.
STRING_BY_NAME: Final[dict[str, Make]] = {
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
    "date": _date,
    "day": _date,
    "birthday": _birth_date,
    "dob": _birth_date,
    "datetime": _iso8601,
    "timestamp": _iso8601,
    "time": _time,
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
    "sql": lambda fake: f"SELECT * FROM {fake.word()} LIMIT {fake.random_int(1, 50)}",  # noqa: S608
}

# Names that end like these (``created_at``, ``start_date``, ``user_id`` ...) -> a string.
STRING_BY_SUFFIX: Final[tuple[tuple[str, Make], ...]] = (
    ("_at", _iso8601),
    ("_date", _date),
    ("_time", _iso8601),
    ("_id", lambda fake: fake.uuid4()),
    ("_url", lambda fake: fake.url()),
    ("_email", lambda fake: fake.email()),
    ("_name", lambda fake: fake.name()),
    ("_path", lambda fake: fake.file_path(depth=2)),
    ("_city", lambda fake: fake.city()),
)

# Field names -> a realistic range (lowest, highest) for integers and numbers.
RANGE_BY_NAME: Final[dict[str, tuple[float, float]]] = {
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

FORMATS: Final[dict[str, Make]] = {
    "uri": lambda fake: fake.url(),
    "url": lambda fake: fake.url(),
    "iri": lambda fake: fake.url(),
    "uri-reference": lambda fake: fake.uri_path(),
    "email": lambda fake: fake.email(),
    "idn-email": lambda fake: fake.email(),
    "date": _date,
    "date-time": _iso8601,
    "time": _time,
    "duration": lambda fake: f"PT{fake.random_int(1, 3600)}S",
    "ipv4": lambda fake: fake.ipv4(),
    "ipv6": lambda fake: fake.ipv6(),
    "ipvanyaddress": lambda fake: fake.ipv4(),
    "ipvanyinterface": lambda fake: fake.ipv4(network=True),
    "ipvanynetwork": lambda fake: fake.ipv4(network=True),
    "ipv4network": lambda fake: fake.ipv4(network=True),
    "ipv6network": lambda fake: fake.ipv6(network=True),
    "ipv4interface": lambda fake: fake.ipv4(network=True),
    "ipv6interface": lambda fake: fake.ipv6(network=True),
    "name-email": lambda fake: f"{fake.name()} <{fake.email()}>",
    "base64": lambda fake: base64.b64encode(fake.sentence().encode()).decode(),
    "base64url": lambda fake: base64.urlsafe_b64encode(fake.sentence().encode()).decode(),
    "hostname": lambda fake: fake.hostname(),
    "path": lambda fake: fake.file_path(depth=2),
    "file-path": lambda fake: fake.file_path(depth=2),
    "password": lambda fake: fake.password(),
    "binary": lambda fake: fake.word(),
}

# An address's limits (RFC 5321): 64 characters before the @, 254 in all.
_LOCAL_MAX: Final = 64
_EMAIL_MAX: Final = 254
_EMAIL_DOMAINS: Final = ("example.com", "mail.org", "ex.io")


def sized_email(rng: random.Random, low: int, high: int | None) -> str | None:
    """An email address between ``low`` and ``high`` characters long; None if none can be."""
    high = _EMAIL_MAX if high is None else min(high, _EMAIL_MAX)
    for domain in _EMAIL_DOMAINS:
        shortest, longest = len(domain) + 2, len(domain) + 1 + _LOCAL_MAX
        lo, hi = max(low, shortest), min(high, longest, max(low, shortest) + 12)
        if lo <= hi:
            size = rng.randint(lo, hi) - len(domain) - 1
            local = "".join(rng.choice(string.ascii_lowercase) for _ in range(size))
            return f"{local}@{domain}"
    return None


def url_of(fake: Faker, schemes: list[str]) -> str:
    """A URL with one of ``schemes``: a web address, a file URL or a database DSN."""
    scheme = fake.random.choice(schemes)
    if scheme in ("http", "https", "ws", "wss", "ftp"):
        return f"{scheme}://{fake.domain_name()}/{fake.uri_path()}"
    if scheme == "file":
        return f"file://{fake.file_path(depth=2)}"
    user, password = fake.user_name(), fake.password(special_chars=False)
    port = fake.random_int(1024, 65535)
    return f"{scheme}://{user}:{password}@{fake.hostname()}:{port}/{fake.word()}"


UUID_FORMAT: Final = re.compile(r"uuid([1-8]?)$")


def tokens(name: str) -> str:
    """``fileName`` / ``file-name`` / ``FILE_NAME`` -> ``file_name``."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).replace("-", "_")
    return snake.lower()
