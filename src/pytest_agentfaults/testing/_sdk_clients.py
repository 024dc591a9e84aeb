"""The ``openai_client`` family of fixtures: official SDK clients built once per session.

Building ``openai.OpenAI()`` costs 36-200 ms, nearly all of it the TLS context its httpx2
client loads; a fault test costs about 1 ms. So `SdkClients` builds each SDK client (and
one TLS context) once per session:

- a sync client pointed at the provider's URL is the session's client itself, put back as
  it was built at the start of each test that asks for it: its attributes restored, the
  dicts among them (``_custom_headers`` ...) copied afresh, anything the last test added
  (an attribute, a resource it replaced or changed) dropped, the SDK's resources exactly
  as the SDK made them (``client.chat``) kept; and so is its httpx2 client (headers,
  cookies, event hooks, auth, timeout, params, base URL, redirects, transports), all but
  its connection pool and whether it is closed. That costs ~5 us a test; a copy per test
  costs ~0.3 ms once its first request is counted, a third of an SDK fault test;
- the others get a copy made with the SDK's own ``client.with_options(...)``.

Either way, options, headers and attributes a test changes stay in that test.

Where the copies point:

- by default at the provider's real URL (``https://api.openai.com/v1``,
  ``https://api.anthropic.com``), answered in-process: the test's http faults fire, its
  ``http_faults`` routes answer, and the network guard refuses anything left over (no
  request leaves the machine);
- at ``llm_server`` instead when the test also asks for ``llm_server``.

A sync copy shares the session's httpx2 client (rebuilt if a test closed it). An async
copy gets a fresh httpx2 client on the shared TLS context, without keep-alive: each test
runs its own event loop, and a connection left open in one loop cannot serve the next.

The ``openai`` and ``anthropic`` packages are imported on a fixture's first use only.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import ssl
import sys
from collections.abc import Callable
from types import MethodType
from typing import Any, Final

from pytest_agentfaults.errors import UsageError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FAKE_KEYS", "SDK_FIXTURES", "SdkClients"]

#: fixture name -> (package, client class, provider of `LLMServer.base_url`, real URL)
SDK_FIXTURES: Final = {
    "openai_client": ("openai", "OpenAI", "openai", "https://api.openai.com/v1"),
    "async_openai_client": ("openai", "AsyncOpenAI", "openai", "https://api.openai.com/v1"),
    "anthropic_client": ("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com"),
    "async_anthropic_client": (
        "anthropic",
        "AsyncAnthropic",
        "anthropic",
        "https://api.anthropic.com",
    ),
}
#: keys that look like the real ones and are not: a real key never rides in a test
FAKE_KEYS: Final = {
    "openai": "sk-agentfaults-test-key",
    "anthropic": "sk-ant-agentfaults-test-key",
}


class SdkClients:
    """The session's SDK clients; `for_test` gives one test its copy."""

    def __init__(self) -> None:
        self._bases: dict[str, Any] = {}
        #: each client's attributes as built (dicts copied), put back for every test
        self._pristine: dict[str, _Pristine] = {}
        self._tls: ssl.SSLContext | None = None

    def for_test(self, fixture: str, llm_server_url: str | None = None) -> Any:
        """The session's client for ``fixture`` as built, or a copy, pointed at the kit."""
        package, _, _, real_url = SDK_FIXTURES[fixture]
        base = self._bases.get(fixture)
        if base is not None:
            self._pristine[fixture].put_back(base)
        if base is None or base._client.is_closed:
            base = self._bases[fixture] = self._build(fixture)
            self._pristine[fixture] = _Pristine(base)
        asynchronous = fixture.startswith("async_")
        if llm_server_url is None and not asynchronous:
            return base
        options: dict[str, Any] = {"base_url": llm_server_url or real_url}
        if asynchronous:
            options["http_client"] = self._http_client(package, asynchronous=True)
        return base.with_options(**options)

    def close(self) -> None:
        """Close the session's sync httpx2 clients (the async copies keep no connection)."""
        bases, self._bases = self._bases, {}
        for fixture, client in bases.items():
            if not fixture.startswith("async_"):
                client.close()

    # ------------------------------------------------------------------ building

    def _build(self, fixture: str) -> Any:
        package, class_name, _, real_url = SDK_FIXTURES[fixture]
        module = _sdk(package, fixture)
        asynchronous = fixture.startswith("async_")
        return getattr(module, class_name)(
            api_key=FAKE_KEYS[package],
            base_url=real_url,
            http_client=self._http_client(package, asynchronous=asynchronous),
        )

    def _http_client(self, package: str, *, asynchronous: bool) -> Any:
        module = _sdk(package, package)
        if self._tls is None:
            self._tls = ssl.create_default_context()
        if not asynchronous:
            return module.DefaultHttpxClient(verify=self._tls, trust_env=False)
        import httpx2  # noqa: PLC0415 # lazy: installed with the SDKs, loaded with them

        return module.DefaultAsyncHttpxClient(
            verify=self._tls,
            trust_env=False,
            limits=httpx2.Limits(max_connections=100, max_keepalive_connections=0),
        )


#: how to copy afresh each kind of attribute a test can change in place (see `_Pristine`)
Copiers = dict[type, Callable[[Any], Any]]


class _Pristine:
    """A client and its http client as built, put back for each test (`put_back`).

    A sync client and the copies a test makes of it (``with_options``, the ``llm_server``
    copy) share one httpx2 client, which a test can change in place too
    (``client._client.headers["x"] = "1"``, an event hook, a cookie an answer set).
    """

    __slots__ = ("client", "http", "resources")

    def __init__(self, client: Any) -> None:
        self.client = _Attributes(client.__dict__, {dict: _fresh_dict})
        self.resources = _Resources()
        http = client._client
        library = _http_library(http)
        copiers: Copiers = {dict: _fresh_dict}
        if library is not None:
            copiers[library.Headers] = library.Headers.copy
            copiers[library.Cookies] = library.Cookies  # a new jar holding the same cookies
        # _state: opened or closed, as the pool under it is (a closed one is rebuilt)
        self.http = _Attributes(http.__dict__, copiers, keep=("_state",))

    def put_back(self, client: Any) -> None:
        """Put ``client`` back as built: what a test set, added or changed in place.

        The SDK's resources the last test made (``client.chat``) stay while exactly as
        the SDK made them (`_Resources`): made again, they cost a test ~50k instructions.
        """
        state = client.__dict__
        built = self.client.state
        made = None
        if len(state) > len(built):
            resources = self.resources
            made = [  # the names the last test added, looked up in C (no set of all names)
                (name, state[name])
                for name in itertools.filterfalse(built.__contains__, state)
                if resources.as_made(client, name, state[name])
            ]
        self.client.put_back(state)
        if made:
            state.update(made)
        self.http.put_back(client._client.__dict__)  # the client's own, put back above


# the names under which an SDK resource keeps its client's request methods (``_post`` is
# ``client.post``), as ``SyncAPIResource.__init__`` sets them in openai and anthropic
_REQUEST_METHODS: Final = frozenset({"_get", "_post", "_patch", "_put", "_delete", "_get_api_list"})

#: a resource and its own resources, each with its class and its attributes when checked
Snapshots = list[tuple[Any, type, dict[str, Any]]]


class _Resources:
    """Which resources the SDK made on a session client are still as the SDK made them.

    A resource (``client.chat``, ``client.chat.completions``) is a ``cached_property``
    value, made on first use. One is as made when it is of the very class its property
    makes (learned once per property, by making one), and its attributes are its client,
    the client's own request methods, and resources of its own as made: nothing a test
    set, replaced or mocked. Once checked, a resource is remembered with its attributes
    (and its own resources'), and later found unchanged by comparing them. Anything
    else goes with the test, and the SDK makes it again.
    """

    __slots__ = ("_checked", "_made")

    def __init__(self) -> None:
        #: (owner class, property name) -> the class it makes, or None (not a resource)
        self._made: dict[tuple[type, str], type | None] = {}
        #: client attribute -> (the resource last found as made, its snapshots)
        self._checked: dict[str, tuple[Any, Snapshots]] = {}

    def as_made(self, client: Any, name: str, value: Any) -> bool:
        """Whether ``value``, ``client``'s attribute ``name``, is a resource as made."""
        checked = self._checked.get(name)
        if checked is not None and checked[0] is value:
            for resource, kind, state in checked[1]:
                if resource.__class__ is not kind or resource.__dict__ != state:
                    break
            else:
                return True
        snapshots: Snapshots = []
        if self._check(client, name, value, client, snapshots):
            self._checked[name] = (value, snapshots)
            return True
        self._checked.pop(name, None)
        return False

    def _check(self, owner: Any, name: str, value: Any, client: Any, snapshots: Snapshots) -> bool:
        known = self._made.get((owner.__class__, name), _UNKNOWN)
        kind = self._learn(owner, name) if known is _UNKNOWN else known
        if kind is None or value.__class__ is not kind:
            return False
        state = value.__dict__
        if state.get("_client") is not client:
            return False
        client_class = client.__class__
        for key, item in state.items():
            if key == "_client":
                continue
            if key in _REQUEST_METHODS:
                if not (
                    item.__class__ is MethodType
                    and item.__self__ is client
                    and item.__func__ is getattr(client_class, key[1:], None)
                ):
                    return False
            elif not self._check(value, key, item, client, snapshots):
                return False
        snapshots.append((value, kind, dict(state)))
        return True

    def _learn(self, owner: Any, name: str) -> type | None:
        """The class ``owner``'s property ``name`` makes, if it is an SDK resource."""
        prop = getattr(owner.__class__, name, None)
        kind = None
        if isinstance(prop, functools.cached_property):
            try:
                made = prop.func(owner)
            except Exception:  # a property that cannot be made again: never kept
                made = None
            state = getattr(made, "__dict__", None)
            if state is not None and state.get("_client") is not None:
                kind = made.__class__
        self._made[owner.__class__, name] = kind
        return kind


_UNKNOWN: Final[Any] = object()


class _Attributes:
    """An object's attributes as built, the mutable ones among them copied afresh."""

    __slots__ = ("copied", "keep", "state")

    def __init__(self, state: dict[str, Any], copiers: Copiers, keep: tuple[str, ...] = ()) -> None:
        #: (name, copier) of the attributes a test can change in place, copied on each restore
        self.copied = tuple(
            (name, copiers[type(value)]) for name, value in state.items() if type(value) in copiers
        )
        self.keep = keep
        fresh = dict(state)
        for name, copy in self.copied:
            fresh[name] = copy(fresh[name])  # never the object a test changed
        self.state = fresh

    def put_back(self, state: dict[str, Any]) -> None:
        """One C-level copy of the attributes, then a fresh copy of each mutable one."""
        kept = [(name, state[name]) for name in self.keep if name in state] if self.keep else ()
        state.clear()
        state.update(self.state)
        if kept:
            state.update(kept)
        built = self.state
        for name, copy in self.copied:
            state[name] = copy(built[name])


def _fresh_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    # the lists among the values too: httpx's event hooks ({"request": [...], ...})
    if not value:  # most of them (custom headers, mounts): no comprehension to run
        return {}
    return {key: list(item) if type(item) is list else item for key, item in value.items()}


def _http_library(http: Any) -> Any:
    """The httpx-like module ``http`` is a client of (httpx2, or httpx for an older SDK)."""
    for cls in type(http).__mro__:  # the SDK's subclass first, then the library's own
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if cls in (getattr(module, "Client", None), getattr(module, "AsyncClient", None)):
            return module
    return None


def _sdk(package: str, fixture: str) -> Any:
    try:
        return importlib.import_module(package)
    except ImportError:
        raise UsageError(
            f"the {fixture} fixture needs the {package} package: pip install {package}"
        ) from None
