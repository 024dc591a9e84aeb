"""``http_faults.assert_all_called``: routes that were never requested fail the test.

A registered route that no request reached means the code under test took another path
than the test claims (or the request went to another mock); like pytest-httpx's unused
responses, it fails the test at teardown, naming each route as the user wrote it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from respx.patterns import Noop, _And

from pytest_agentfaults._redact import redact_text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from respx.models import Route

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["AllCalledSwitch", "describe_route", "unmatched_routes_note", "unused_routes_message"]

_URL_PARTS = ("Scheme", "Host", "Port", "Path", "Params")


class AllCalledSwitch:
    """What ``http_faults.assert_all_called`` reads as.

    A setting (``bool(http_faults.assert_all_called)``, set it with
    ``http_faults.assert_all_called = False``) that is also respx's check, callable as
    ``http_faults.assert_all_called()`` to fail at once over routes not yet requested.
    """

    __slots__ = ("_router",)

    def __init__(self, router: Any) -> None:
        self._router = router

    def __bool__(self) -> bool:
        return bool(self._router._routes_must_be_called)  # noqa: SLF001 - our own router

    def __eq__(self, other: object) -> bool:
        return bool(self) == other

    def __hash__(self) -> int:
        return hash(bool(self))

    def __repr__(self) -> str:
        return repr(bool(self))

    def __call__(self) -> None:
        """Raise `AssertionError` naming every route not requested yet."""
        __tracebackhide__ = True
        unused = [route for route in self._router.routes if not route.called]
        if unused:
            raise AssertionError(unused_routes_message(unused, self._router.bypassed))


def unused_routes_message(routes: list[Route], bypassed: list[tuple[Any, str]]) -> str:
    """The teardown failure over ``routes``: each route, then the two ways out.

    ``bypassed`` are requests a client's own transport answered (pytest-httpx, a
    MockTransport): one that a route would have matched explains why it went unused.
    """
    lines = [f"agentfaults: {len(routes)} http_faults route(s) registered but never requested:"]
    for route in routes:
        lines.append(f"  {redact_text(describe_route(route))}")
        for request, transport in bypassed:
            if _matches(route, request):
                lines.append(
                    f"    {request.method} {redact_text(str(request.url))} went to the "
                    f"client's own transport ({transport}), which answers before any "
                    "http_faults route: register the answer there, or drop that mock"
                )
                break
    lines += [
        "Every route must be requested at least once, as with pytest-httpx and respx: "
        "remove the route, fix the request that should reach it, or allow unused routes "
        "in this test with http_faults.assert_all_called = False.",
    ]
    return "\n".join(lines)


def unmatched_routes_note(routes: Iterable[Route]) -> str:
    """A sentence naming the routes a refused request matched none of ("": none).

    A script route says which script it is: its provider names its endpoint.
    """
    shown: list[str] = []
    for route in routes:
        if len(shown) == _NAMED:
            shown.append("...")
            break
        model = getattr(getattr(route.side_effect, "agentfaults_script", None), "model", None)
        script = getattr(model, "name", None)
        text = describe_route(route)
        shown.append(f"{text} ({script})" if isinstance(script, str) else text)
    if not shown:
        return ""
    return redact_text(f" No http_faults route of this test matched it: {'; '.join(shown)}.")


_NAMED: Final = 5  # the routes a refusal names, at most


def _matches(route: Route, request: Any) -> bool:
    try:
        return bool(route.pattern.match(request))
    except Exception:  # an httpx2 request a pattern cannot read: no hint, still the failure
        return False


def describe_route(route: Route) -> str:
    """A route as the user wrote it, e.g. ``POST https://api.example.com/v1/things``."""
    pattern = route.pattern
    named = f" (name {route.name!r})" if route.name else ""
    if isinstance(pattern, Noop):
        return f"any request{named}"
    leaves: list[Any] | None = list(pattern) if _only_ands(pattern, _And) else None
    if leaves is None:
        return f"{pattern!r}{named}"
    method = "ANY"
    url: dict[str, str] = {}
    extra: list[str] = []
    for leaf in leaves:
        kind = type(leaf).__name__
        lookup = getattr(getattr(leaf, "lookup", None), "value", "eq")
        if kind == "Method":
            method = str(leaf.value) if lookup == "eq" else f"method {lookup} {leaf.value!r}"
        elif kind in _URL_PARTS and lookup == "eq":
            url[kind] = str(leaf.value)
        elif kind == "URL" and lookup == "eq":
            url["URL"] = str(leaf.value)
        elif kind == "URL":
            url["URL"] = f"url {lookup} {_shown(leaf.value)}"
        else:
            extra.append(repr(leaf))
    return " ".join([method, _url(url), *extra]).strip() + named


def _only_ands(pattern: Any, and_type: type) -> bool:
    if isinstance(pattern, and_type):
        parts: tuple[Any, ...] = getattr(pattern, "value", ())
        return all(_only_ands(part, and_type) for part in parts)
    return type(pattern).__name__ not in ("_Or", "_Invert")


def _url(parts: dict[str, str]) -> str:
    if "URL" in parts:
        return parts["URL"]
    if not parts:
        return "any URL"
    scheme = parts.get("Scheme", "")
    host = parts.get("Host", "")
    port = f":{parts['Port']}" if "Port" in parts else ""
    base = f"{scheme or '*'}://{host}{port}" if host else (f"{scheme}://*" if scheme else "")
    query = f"?{parts['Params']}" if parts.get("Params") else ""
    return f"{base}{parts.get('Path', '')}{query}" or "any URL"


def _shown(value: Any) -> str:
    pattern = getattr(value, "pattern", None)
    return repr(pattern if isinstance(pattern, str) else value)
