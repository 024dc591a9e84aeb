"""A sync SDK fixture's session client, and the httpx2 client under it, put back per test."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from pytest_agentfaults.testing._sdk_clients import SdkClients  # noqa: E402


@pytest.fixture
def clients():
    clients = SdkClients()
    yield clients
    clients.close()


def _seen(http) -> dict[str, object]:
    return {
        "headers": dict(http.headers),
        "cookies": dict(http.cookies),
        "event_hooks": {name: list(hooks) for name, hooks in http.event_hooks.items()},
        "params": http.params,
        "timeout": http.timeout,
        "auth": http.auth,
        "base_url": http.base_url,
        "follow_redirects": http.follow_redirects,
        "max_redirects": http.max_redirects,
        "mounts": dict(http._mounts),
        "transport": http._transport,
    }


@pytest.mark.parametrize("fixture", ["openai_client", "anthropic_client"])
def test_what_a_test_changes_in_place_on_the_http_client_is_undone(clients, fixture):
    first = clients.for_test(fixture)
    http = first._client
    built = _seen(http)
    http.headers["x-leak"] = "1"
    http.cookies.set("leak", "1")
    http.event_hooks["request"].append(print)
    http.params = {"leak": "1"}
    http.timeout = 0.001
    http.auth = ("user", "leak")
    http.base_url = "https://leak.example"
    http.follow_redirects = not http.follow_redirects
    http.max_redirects = 0
    http._mounts[httpx2.URL("https://leak.example")] = None
    http._transport = None
    http.added_by_the_test = True

    second = clients.for_test(fixture)
    assert second is first  # the session's client, not a copy ...
    assert second._client is http  # ... with its httpx2 client and pool
    assert _seen(http) == built
    assert not hasattr(http, "added_by_the_test")
    second._client.headers["x-again"] = "1"  # a fresh copy each time, never the built one
    assert "x-again" not in clients.for_test(fixture)._client.headers


def test_a_replaced_http_client_is_put_back_and_a_closed_one_rebuilt(clients):
    client = clients.for_test("openai_client")
    http = client._client
    with httpx2.Client() as stray:
        client._client = stray
        assert clients.for_test("openai_client")._client is http
    http.close()
    rebuilt = clients.for_test("openai_client")
    assert not rebuilt._client.is_closed
    assert rebuilt._client is not http


# The SDK's resources (``client.chat``, made on first use) stay from test to test while
# exactly as the SDK made them; anything a test did to one drops it.


def test_an_sdk_resource_as_made_stays_for_the_next_test(clients):
    client = clients.for_test("openai_client")
    chat, completions = client.chat, client.chat.completions
    again = clients.for_test("openai_client")
    assert again.chat is chat
    assert again.chat.completions is completions
    assert again.chat.completions._client is again


@pytest.mark.parametrize(
    "change",
    [
        lambda client: setattr(client.chat.completions, "create", lambda **kw: "fake"),
        lambda client: setattr(client.chat.completions, "_post", lambda *a, **kw: "fake"),
        lambda client: setattr(client.chat, "completions", object()),
        lambda client: setattr(client.chat, "extra", 1),
        lambda client: setattr(client, "chat", object()),
        lambda client: setattr(client.chat.completions, "__class__", _Completions(client)),
    ],
    ids=["method", "request-method", "sub-resource", "attribute", "resource", "class"],
)
def test_an_sdk_resource_a_test_changed_is_made_afresh(clients, change):
    client = clients.for_test("openai_client")
    client.chat.completions  # noqa: B018 - made, as a test's first call makes it
    clients.for_test("openai_client")  # now known as made
    chat = client.chat
    change(client)
    again = clients.for_test("openai_client")
    assert again.chat is not chat
    completions = again.chat.completions
    assert type(completions) is openai.resources.chat.completions.Completions
    assert "create" not in vars(completions)
    assert completions._post == again.post
    assert not hasattr(again.chat, "extra")


def _Completions(client):  # noqa: N802 - a subclass of the resource's class
    return type("Completions", (type(client.chat.completions),), {})


def test_an_anthropic_resource_stays_or_goes_by_the_same_rule(clients):
    client = clients.for_test("anthropic_client")
    messages = client.messages
    assert clients.for_test("anthropic_client").messages is messages
    messages.create = lambda **kw: "fake"
    assert "create" not in vars(clients.for_test("anthropic_client").messages)
