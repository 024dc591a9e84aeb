"""respx's routes for ``http_faults``, without the ~15 us each of their ``unittest.mock`` part.

A respx ``CallList`` (``route.calls``, ``router.calls``) is a list and a
``unittest.mock.NonCallableMock``; building the mock (a new class per instance, a spec
scan) is what makes a router and a route cost ~100 us, more than the rest of a fault test
besides the SDK. `Calls` is the same list whose mock part is made on first use: a test
that reads ``route.calls``, ``.call_count``, ``.last`` or iterates never pays for it, and
one that calls a mock method (``route.calls.assert_called_once()``) gets the full mock,
with its own class, exactly as respx builds it.

`LightRoute` is a respx ``Route`` (same class hierarchy, same API) whose call lists are
`Calls` and whose pattern, parsed from the same arguments, is reused between tests
(respx's patterns are values: routes compare by pattern, and a router without a base URL
never changes one). Two more costs of respx go:

- ``route.respond(...)`` builds respx's ``MockResponse`` (and reads its body) only when
  something asks for it (``route.return_value``, a snapshot, respx's own resolving): a
  matched request gets the response respx would clone for it, built straight from the
  same arguments (`_Pending`), its body read once instead of twice. Only for arguments
  that cannot change or fail later (bytes or str bodies, str headers); any other goes
  to respx at once.
- a route's call lists name it weakly (respx's name it, which makes route and lists a
  cycle that only the garbage collector frees, with every request and answer recorded
  in them): a route is freed when its test lets go of it. A list's mock part, built on
  first use, is named for the route as respx's is (for no route once the route is gone).
- a pattern of the request's method and URL alone (method, scheme, host, port, path,
  params, url) is matched once per request URL (`_url_match`): the http_faults router
  sees the same few endpoints again and again.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any, Final, Self
from unittest import mock

import httpx
from respx import patterns
from respx.models import (
    AllMockedAssertionError,
    CallList,
    MockResponse,
    PassThrough,
    ResolvedRoute,
    Route,
    SideEffectError,
    clone_response,
)
from respx.patterns import M, Pattern

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["NO_CALLS", "Calls", "LightRoute", "resolve_routes", "route_pattern"]

_NonCallableMock: Any = mock.NonCallableMock
_MOCK_CLASS: Any = mock.NonCallableMock.__dict__["__class__"]  # the mock's property
_SET_CLASS: Any = object.__dict__["__class__"].__set__  # past our property, as a plain object


class Calls(CallList):
    """respx's ``CallList``, its ``NonCallableMock`` part made on first use."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:  # noqa: ARG004
        # NonCallableMock.__new__ makes a class per instance: deferred to `_become_mock`
        return list.__new__(cls)

    def __init__(self, *args: Any, name: Any = "respx") -> None:
        list.__init__(self, *args)
        self.__dict__["_agentfaults_name"] = name  # a route's own: a weak reference to it

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # isinstance() asks it, as a mock's does
        if "_mock_children" not in self.__dict__:
            return type(self)
        return _MOCK_CLASS.fget(self)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        if "_mock_children" in state or "_agentfaults_becoming" in state:
            return _NonCallableMock.__getattr__(self, name)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # as a mock without a spec answers
        self._become_mock()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_mock_children" not in self.__dict__:
            self._become_mock()
        _NonCallableMock.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if "_mock_children" not in self.__dict__:
            self._become_mock()
        _NonCallableMock.__delattr__(self, name)

    def _become_mock(self) -> None:
        """Build the mock part as ``CallList(name=...)`` would have, in its own class."""
        state = self.__dict__
        state["_agentfaults_becoming"] = True
        try:
            cls = type(self)
            _SET_CLASS(self, type(cls.__name__, (cls,), {"__doc__": cls.__doc__}))
            name = state["_agentfaults_name"]
            if name.__class__ is weakref.ref:  # a route's list names the route, as respx's
                name = name()
            _NonCallableMock.__init__(self, name=name)
        finally:
            del state["_agentfaults_becoming"]


# (patterns, lookups) -> the parsed pattern: respx's patterns are values, never changed by
# a router without a base URL (the http_faults router has none)
_patterns: dict[Any, Any] = {}


def route_pattern(patterns: tuple[Any, ...], lookups: dict[str, Any]) -> Any:
    """``respx.patterns.M(*patterns, **lookups)``, parsed once per distinct arguments."""
    try:
        key = (patterns, tuple(lookups.items()))
        hash(key)
    except TypeError:  # an unhashable lookup value (a dict of params ...): not kept
        return M(*patterns, **lookups)
    found = _patterns.get(key)
    if found is None:
        found = M(*patterns, **lookups)
        if len(_patterns) < 1024:  # a session's distinct routes; bounded all the same
            _patterns[key] = found
    return found


class LightRoute(Route):
    """A respx ``Route`` with `Calls` for call lists, a reused pattern, a lazy response."""

    def __init__(self, *patterns: Any, **lookups: Any) -> None:
        # what Route.__init__ sets, with the two costly parts made cheap
        self._pattern = route_pattern(patterns, lookups)
        self._return_value = None
        self._side_effect = None
        self._pass_through = False
        self._name = None
        self._snapshots: list[tuple[Any, ...]] = []
        self.calls = Calls(name=weakref.ref(self))
        self.snapshot()

    # respx reads and sets ``_return_value`` itself: a `_Pending` answer becomes respx's
    # MockResponse the first time anything asks for it
    @property
    def _return_value(self) -> httpx.Response | None:
        state = self.__dict__
        value = state["_agentfaults_value"]
        if value.__class__ is _Pending:
            value = state["_agentfaults_value"] = value.build()
        return value  # type: ignore[no-any-return]

    @_return_value.setter
    def _return_value(self, value: httpx.Response | None) -> None:
        self.__dict__["_agentfaults_value"] = value

    def respond(self, status_code: int = 200, *, content: Any = None, **kwargs: Any) -> Route:
        """As respx's; its ``MockResponse`` built when first needed (see the module docs)."""
        pending = _Pending.of(status_code, content, kwargs)
        if pending is None:
            return super().respond(status_code, content=content, **kwargs)
        self.pass_through(False)  # what respx's ``mock(return_value=...)`` sets
        self.__dict__["_agentfaults_value"] = pending
        self._side_effect = None
        return self

    def match(self, request: httpx.Request) -> Any:
        """As respx's ``Route.match``; a `_Pending` answer is built for the request itself."""
        context: dict[str, Any] = {}
        pattern = self._pattern
        if pattern:
            found = _url_match(pattern, request)
            if not found:
                return None
            context = found.context
        if self._pass_through:
            return request
        value = self.__dict__["_agentfaults_value"]
        if value.__class__ is _Pending and not self._side_effect:
            return value.answer(request)
        return self.resolve(request, **context)

    def snapshot(self) -> None:
        """As respx's, keeping the calls in a `Calls` (`NO_CALLS` for none yet)."""
        side_effect = self._side_effect
        if side_effect is not None and isinstance(side_effect, Iterator):
            side_effects = tuple(side_effect)
            self._side_effect = iter(side_effects)
            side_effect = iter(side_effects)
        calls = self.calls
        self._snapshots.append(
            (
                self._pattern,
                self._name,
                self._return_value,
                side_effect,
                self._pass_through,
                Calls(calls, name=weakref.ref(self)) if calls else NO_CALLS,
            )
        )


#: the calls of a snapshot taken before any call (every route's first, every router's):
#: one list for all of them, as `rollback` only copies out of a snapshot, and no one else
#: sees it
NO_CALLS: Final = Calls()


def resolve_routes(router: Any, request: httpx.Request) -> ResolvedRoute:
    """The sync ``Router.resolve`` of respx, its steps inline rather than in a generator.

    The first route that matches answers; the call is recorded on the router and the
    route; no match raises respx's ``AllMockedAssertionError``, a pass-through route
    raises ``PassThrough`` and a failing side effect its own error, each recorded first,
    as respx's ``resolver`` does.
    """
    resolved = ResolvedRoute()  # type: ignore[no-untyped-call]
    try:
        for route in router.routes:
            prospect = route.match(request)
            if prospect is not None:
                resolved.route = route
                resolved.response = prospect
                break
        if resolved.route is None:
            if router._assert_all_mocked:  # noqa: SLF001 - respx's own setting
                raise AllMockedAssertionError(f"RESPX: {request!r} not mocked!")
            resolved.response = httpx.Response(200)
        elif resolved.response == request:
            raise PassThrough(  # noqa: TRY301 - recorded below, as respx's resolver does
                f"Request marked to pass through: {request!r}",
                request=request,
                origin=resolved.route,
            )
    except SideEffectError as error:
        router.record(request, response=None, route=error.route)
        raise error.origin from error
    except PassThrough:
        router.record(request, response=None, route=resolved.route)
        raise
    response = resolved.response
    router.record(request, response=response, route=resolved.route)
    if response and isinstance(response.stream, httpx.ByteStream):
        response.read()  # as respx's: the stream read before the answer goes back
    return resolved


#: the arguments of ``respond`` a `_Pending` takes (besides ``status_code``, ``content``)
_TEXTS: Final = ("text", "html", "content_type")


class _Pending:
    """The arguments of ``route.respond(...)``, not yet built into respx's ``MockResponse``."""

    __slots__ = ("content", "content_type", "headers", "html", "status_code", "text")

    def __init__(self, status_code: int, content: Any, headers: Any, texts: dict[str, Any]) -> None:
        self.status_code = status_code
        self.content = content
        self.headers = headers
        self.text = texts.get("text")
        self.html = texts.get("html")
        self.content_type = texts.get("content_type")

    @classmethod
    def of(cls, status_code: Any, content: Any, kwargs: dict[str, Any]) -> _Pending | None:
        """The pending answer of these arguments, or None: built at once by respx.

        Only values that cannot change (an int status, a bytes or str body, ascii str
        headers, copied) and so cannot fail differently later.
        """
        if status_code.__class__ is not int or content.__class__ not in _BODIES:
            return None
        headers = kwargs.get("headers")
        texts: dict[str, Any] = {}
        for name, value in kwargs.items():
            if value is None or name == "headers":
                continue
            if name not in _TEXTS or value.__class__ is not str:
                return None  # json=, cookies=, stream=, http_version= ...: respx's own way
            texts[name] = value
        if headers is not None:
            headers = _plain_headers(headers)
            if headers is None:
                return None
        return cls(status_code, content, headers, texts)

    def build(self) -> MockResponse:
        """The ``MockResponse`` of these arguments, exactly as respx's ``respond`` builds it."""
        return MockResponse(
            self.status_code,
            headers=self.headers,
            content=self.content,
            text=self.text,
            html=self.html,
            content_type=self.content_type,
        )

    def answer(self, request: httpx.Request) -> httpx.Response:
        """The response respx answers ``request`` with: ``MockResponse``'s, cloned, read.

        The first time, respx's own steps; the same arguments (a session's routes answer
        alike test after test) give the same headers and the same body, so that answer is
        remembered (`_Built`) and later ones are made from it.
        """
        headers = self.headers
        key = (
            self.status_code,
            self.content,
            tuple(headers.items()) if headers.__class__ is dict else headers,
            self.text,
            self.html,
            self.content_type,
        )
        built = _built.get(key)
        if built is not None:
            return built.answer(request)
        response = clone_response(self.build(), request)  # as respx's Route.resolve
        if isinstance(response.stream, httpx.ByteStream):
            response.read()  # as respx's Router.resolve
        _Built.remember(key, response)
        return response


class _Built:
    """A route's answer as built once: its status, final headers, sent bytes and body.

    `answer` makes the same response for another request: the headers and the sent bytes
    as a byte stream, and the state ``Response.read()`` leaves (the body as decoded, the
    stream consumed and closed), set without reading again, as every value is known.
    """

    __slots__ = ("content", "headers", "sent", "status_code")

    def __init__(self, response: httpx.Response, sent: bytes) -> None:
        self.status_code = response.status_code
        self.headers = response.headers.copy()
        self.sent = sent
        self.content = response.content

    @staticmethod
    def remember(key: tuple[Any, ...], response: httpx.Response) -> None:
        """Keep ``response`` (just built from ``key``) when its body is small and was read."""
        stream = response.stream
        if stream.__class__ is not httpx.ByteStream or not hasattr(response, "_content"):
            return
        sent = b"".join(stream)  # a ByteStream: the bytes as given
        if len(sent) > _KEPT_BODY:
            return
        if len(_built) >= 64:  # a session's distinct answers; bounded all the same
            _built.clear()
        _built[key] = _Built(response, sent)

    def answer(self, request: httpx.Request) -> httpx.Response:
        response = httpx.Response(
            self.status_code,
            headers=self.headers,
            stream=httpx.ByteStream(self.sent),
            request=request,
        )
        # what read() leaves, with the values it would compute
        response._content = self.content  # noqa: SLF001 - what httpx's read() sets
        response.is_stream_consumed = True
        response._num_bytes_downloaded = len(self.sent)  # noqa: SLF001 - as read() counts
        response.is_closed = True
        return response


# the arguments of a `_Pending` -> its answer as first built
_built: dict[tuple[Any, ...], _Built] = {}
_KEPT_BODY: Final = 64 * 1024


_BODIES: Final = frozenset({bytes, str, type(None)})


def _plain_headers(headers: Any) -> Any:
    """A copy of ``headers`` when every name and value is an ascii str, else None."""
    if headers.__class__ is dict:
        items: Any = headers.items()
    elif headers.__class__ in (list, tuple):
        items = headers
    else:
        return None
    for item in items:
        if item.__class__ is not tuple or len(item) != 2:
            return None
        name, value = item
        if name.__class__ is not str or value.__class__ is not str:
            return None
        if not (name.isascii() and value.isascii()):
            return None
    return dict(headers) if headers.__class__ is dict else tuple(headers)


# -------------------------------------------------------------------- URL-only patterns

#: the patterns that read nothing of a request but its method and its URL
_URL_ONLY: Final[frozenset[type[Pattern]]] = frozenset(
    {
        patterns.Method,
        patterns.Scheme,
        patterns.Host,
        patterns.Port,
        patterns.Path,
        patterns.Params,
        patterns.URL,
        patterns.Noop,
    }
)
# id(pattern) -> (pattern, whether it reads only the method and the URL)
_url_only: dict[int, tuple[Pattern, bool]] = {}
# (id(pattern), method, id(url)) -> (pattern, url, its match): respx's URLs are values
_matches: dict[tuple[int, str, int], tuple[Pattern, Any, Any]] = {}


def _url_match(pattern: Pattern, request: httpx.Request) -> Any:
    """``pattern.match(request)``, remembered per method and URL object for URL-only patterns.

    The http layer hands its routes one ``httpx.URL`` per endpoint (`_route_answer`): the
    same request line is matched once.
    """
    known = _url_only.get(id(pattern))
    if known is None or known[0] is not pattern:
        known = (pattern, _reads_url_only(pattern))
        if len(_url_only) >= 1024:
            _url_only.clear()
        _url_only[id(pattern)] = known
    if not known[1]:
        return pattern.match(request)
    url = request.url
    key = (id(pattern), request.method, id(url))
    found = _matches.get(key)
    if found is not None and found[0] is pattern and found[1] is url:
        return found[2]
    match = pattern.match(request)
    if len(_matches) >= 1024:
        _matches.clear()
    _matches[key] = (pattern, url, match)
    return match


def _reads_url_only(pattern: Pattern) -> bool:
    """Whether ``pattern`` (and its bases) reads only the request's method and URL."""
    kind = type(pattern)
    if kind is patterns._And or kind is patterns._Or:  # noqa: SLF001 - respx's own combinations
        return all(_reads_url_only(part) for part in pattern.value)
    if kind not in _URL_ONLY:
        return False
    base: Pattern | None = pattern.base
    return base is None or _reads_url_only(base)
