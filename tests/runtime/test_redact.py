"""Secrets never reach a trace: the redaction rules."""

from __future__ import annotations

import base64
import secrets
import subprocess
import sys
import threading

import pytest

from pytest_agentfaults._redact import (
    REDACTED,
    LearnedSecrets,
    redact_headers,
    redact_text,
    redact_value,
)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnopqrstuvwxyz123456",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "sk-proj-abcdefghijklmnopqrstuvwxyz",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ],
)
def test_key_shaped_strings_are_redacted(secret):
    assert secret not in redact_text(f"failed with {secret} today")
    assert REDACTED in redact_text(f"failed with {secret} today")


def test_bearer_and_key_value_forms_keep_their_prefix():
    assert (
        redact_text("Authorization: Bearer abc.def.ghi123") == f"Authorization: Bearer {REDACTED}"
    )
    assert redact_text("api_key=hunter2hunter2") == f"api_key={REDACTED}"
    assert redact_text('{"api_key": "hunter2hunter2"}') == f'{{"api_key": "{REDACTED}"}}'


@pytest.mark.parametrize("shortest", ["token=abcdef", "token:abcdef", "Basic dXNlcjpw"])
def test_the_shortest_secret_each_rule_can_match_is_redacted(shortest):
    # Text shorter than the shortest possible secret skips the scan: this pins that bound.
    assert redact_text(shortest) != shortest
    assert redact_text(shortest[:-1]) == shortest[:-1]


def test_ordinary_text_is_untouched():
    text = "ConnectionError: reset by peer after 3 attempts (status 503)"
    assert redact_text(text) == text


def test_credential_headers_are_blanked():
    headers = redact_headers(
        {
            "Authorization": "Bearer sk-abcdefghijklmnopqrstuv",
            "x-api-key": "sk-ant-abcdefghijklmnopqrstuv",
            "api-key": "azure-key",
            "Content-Type": "application/json",
            "x-stainless-retry-count": "1",
        }
    )
    assert headers == {
        "authorization": REDACTED,
        "x-api-key": REDACTED,
        "api-key": REDACTED,
        "content-type": "application/json",
        "x-stainless-retry-count": "1",
    }


def test_rate_limit_headers_that_count_tokens_are_kept():
    headers = redact_headers({"x-ratelimit-remaining-tokens": "9000", "x-auth-token": "abc"})
    assert headers == {"x-ratelimit-remaining-tokens": "9000", "x-auth-token": REDACTED}


def test_a_generic_key_query_parameter_is_redacted_whatever_its_shape():
    hex40 = "0123456789abcdef0123456789abcdef01234567"
    assert (
        redact_text(f"GET https://x.test/v1?key={hex40}") == f"GET https://x.test/v1?key={REDACTED}"
    )
    assert redact_text("https://x.test/?a=1&key=short") == f"https://x.test/?a=1&key={REDACTED}"


QUERY_NAMES = [
    *("key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature"),
    *("password", "auth", "subscription-key", "client_secret", "refresh_token", "id_token"),
    *("passwd", "pwd", "private_key"),
]


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_credential_query_parameters_are_redacted(name):
    url = f"https://x.test/a?page=2&{name}=s3cr3tValue&b=1"
    assert redact_text(url) == f"https://x.test/a?page=2&{name}={REDACTED}&b=1"


def test_long_hex_or_base64_tokens_in_any_query_parameter_are_redacted():
    assert redact_text("https://x.test/?cursor=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b") == (
        f"https://x.test/?cursor={REDACTED}"
    )
    assert redact_text("https://x.test/?s=aGVsbG8gd29ybGQgdGhpcyBpcyBsb25n0&q=1") == (
        f"https://x.test/?s={REDACTED}&q=1"
    )


def test_ordinary_query_strings_are_untouched():
    for text in ("https://x.test/?page=2&sort=name", "https://x/y?at=2026-11-23T14:42:18"):
        assert redact_text(text) == text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://bob:hunter2@api.example.com/x", "https://bob:[REDACTED]@api.example.com/x"),
        (
            "GET http://:s3cr3t@127.0.0.1:8080/v1 failed",
            "GET http://:[REDACTED]@127.0.0.1:8080/v1 failed",
        ),
        ("redis://default:p%40ss@cache:6379/0", "redis://default:[REDACTED]@cache:6379/0"),
    ],
)
def test_a_password_in_a_url_is_redacted_and_the_user_kept(url, shown):
    assert redact_text(url) == shown


def test_urls_without_a_password_are_untouched():
    for text in ("https://bob@api.example.com/x", "mailto:bob@example.com", "a:b @ c://d"):
        assert redact_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "x-api-key: abcdefgh12",
        "{'x-goog-api-key': 'abcdefgh12'}",
        '"cookie": "session=abc; id=3"',
        "Set-Cookie: session=abcdef; Path=/",
        "proxy-authorization: Basic-ish",
    ],
)
def test_credential_headers_written_as_text_are_redacted(text):
    assert REDACTED in redact_text(text)
    assert "abcdef" not in redact_text(text)
    assert "Basic-ish" not in redact_text(text)


def test_redact_value_walks_dicts_and_lists():
    value = {"a": ["sk-proj-abcdefghijklmnopqrstuv", 3], "b": ("Bearer abcdefghijk123",)}
    assert redact_value(value) == {"a": [REDACTED, 3], "b": (f"Bearer {REDACTED}",)}


def test_every_credential_header_name_lets_its_text_rule_run():
    from pytest_agentfaults import _redact as redact

    for name in redact.SECRET_HEADERS:
        assert any(marker in name for marker in redact._HEADER_MARKERS), name


def test_the_quick_check_lets_every_rule_run():
    # redact_text first checks a short list of markers; each rule's own markers must pass it
    from pytest_agentfaults import _redact as redact

    for marker in redact._MARKERS:
        assert any(gate in marker for gate in redact._GATE), marker


@pytest.mark.parametrize(
    "code",
    [
        "with anthropic.Anthropic(api_key=ANTHROPIC_KEY) as client:",
        "client = openai.OpenAI(api_key=settings.api_key, max_retries=0)",
        "model = Model(api_key=api_key)",
        "Agent(token=self._token); run()",
        "password = getpass()",
        "api_key = os.environ['OPENAI_API_KEY']",
        "headers = {'api_key': API_KEY}",
        "def connect(api_key: Optional[str] = None, token: SecretStr = DEFAULT) -> None:",
    ],
)
def test_a_python_name_given_as_a_key_is_code_not_a_secret(code):
    # A traceback's source lines pass through here: a name is not the key it holds, and
    # the brackets and commas after it belong to the code (its value was never shown).
    assert redact_text(code) == code


@pytest.mark.parametrize(
    "code",
    [
        # a lambda where a value is expected: the expression goes on after the keyword
        '"password": lambda fake: fake.password(),',
        "FIELDS = {'api_key': lambda: os.environ['KEY'], 'token': lambda n: n}",
        "token=lambda\tx: x",
    ],
)
def test_a_lambda_given_as_a_value_is_code_not_a_secret(code):
    assert redact_text(code) == code


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # the word alone, or with more of a token after it, is what a password may be
        ("password=lambda", "password=[REDACTED]"),
        ("password: lambda\n", "password: [REDACTED]\n"),
        ("password=lambda2 other", "password=[REDACTED] other"),
        ("password=lambdas other", "password=[REDACTED] other"),
    ],
)
def test_the_word_lambda_with_no_expression_after_it_stays_a_secret(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "code",
    [
        'client.get(url, headers={"x-api-key": SERVER_KEY})',
        "headers = {'Authorization': auth_header(), 'cookie': jar['session']}",
        "request.headers['x-goog-api-key'] = settings.google_key",
    ],
)
def test_a_python_name_given_as_a_credential_header_is_code_not_a_secret(code):
    assert redact_text(code) == code


@pytest.mark.parametrize(
    "code",
    [
        # a literal that is the field's own name, two words (google-auth, the Anthropic SDK)
        '_JSON_FILE_PRIVATE_KEY = "private_key"',
        'API_KEY = "api_key"',
        'GRANT_TYPE_REFRESH_TOKEN = "refresh_token"',
        '{"client_secret": "clientSecret", "refresh_token": "refreshToken"}',
        "payload = {'access_token': 'access_token'}",
    ],
)
def test_a_literal_that_names_its_own_credential_field_is_code(code):
    assert redact_text(code) == code


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # one word is a password people choose: "password", "secret"
        ('password = "password"', 'password = "[REDACTED]"'),
        ("{'secret': 'secret'}", "{'secret': '[REDACTED]'}"),
        # another field's name, or more than the name
        ('password = "private_key"', 'password = "[REDACTED]"'),
        ('api_key = "api_key_1234"', 'api_key = "[REDACTED]"'),
        ('api_key = "my_api_key"', 'api_key = "[REDACTED]"'),
        ("refresh_token='refresh_token.abc'", "refresh_token='[REDACTED]'"),
    ],
)
def test_a_literal_that_is_not_exactly_its_fields_name_stays_secret(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('headers={"x-api-key": "SERVER_KEY"}', 'headers={"x-api-key": "[REDACTED]"}'),
        ("x-api-key: gw_live_EEEEsecretGATEWAYkey", "x-api-key: [REDACTED]"),
        ("x-api-key: letmeinplease", "x-api-key: [REDACTED]"),
        ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer [REDACTED]"),
        ("cookie: session=abc123", "cookie: [REDACTED]"),
    ],
)
def test_a_credential_header_value_written_as_text_stays_secret(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "code",
    [
        # a header's value built by an expression: its literal part is only the scheme
        # (or a cookie's name), the credential is a name the reader can follow
        'headers = {"Authorization": "Bearer " + token}',
        '{"Authorization": "Token " + key, "Accept": "application/json"}',
        "headers={'Authorization': 'Bearer %s' % self._token}",
        '"Authorization": "Bearer {}".format(token),',
        '"Authorization": "Bearer {token}".format(token=settings.token)',
        '"Authorization": "Basic " + base64.b64encode(credentials).decode()',
        '"Authorization": "Bearer" + " " + token',
        "{'cookie': 'session=' + session_id}",
        'headers={"Authorization": f"Bearer {token}"}',
        '"Authorization": auth_header(user, scope="read"),',
    ],
)
def test_a_credential_header_built_by_an_expression_is_code_not_a_secret(code):
    assert redact_text(code) == code


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a literal beyond the scheme is a credential, in an expression or not
        ('{"Authorization": "Bearer abcd" + x}', '{"Authorization": "[REDACTED]" + x}'),
        ("{'x-api-key': 'abcdef123' + suffix}", "{'x-api-key': '[REDACTED]' + suffix}"),
        ("{'cookie': 'session=abc123; ' + rest}", "{'cookie': '[REDACTED]' + rest}"),
        # base64 ends in "=" as a cookie's name does: it is no name
        ('"x-api-key": "dGhpcyBpcyBhIHNlY3JldA=" + x', '"x-api-key": "[REDACTED]" + x'),
        ('"Authorization": "Token %s1234" % x', '"Authorization": "[REDACTED]" % x'),
        ("{'Authorization': 'Bearer abcd'}", "{'Authorization': '[REDACTED]'}"),
        # no expression follows: a header's value as a report shows it
        (
            "{'authorization': 'Bearer xyz', 'accept': '*/*'}",
            "{'authorization': '[REDACTED]', 'accept': '*/*'}",
        ),
    ],
)
def test_a_literal_credential_in_a_header_expression_stays_secret(text, shown):
    assert redact_text(text) == shown


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"


@pytest.mark.parametrize(
    "prose",
    [
        # a word after the scheme's name, in a message or a docstring
        "Bearer authentication failed: the server wants an access token",
        "use Bearer tokens, not cookies",
        "The Bearer authentication scheme (RFC 6750) sends the token in a header.",
        "raise ValueError('Bearer authorization needs a token')",
        "Supports Basic authentication and Bearer authentication.",
        "the basic functionality works; basic configuration is enough",
        "the bearer credentials expire after an hour",
    ],
)
def test_a_word_after_bearer_or_basic_is_prose_not_a_credential(prose):
    assert redact_text(prose) == prose


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # in prose or a log line: a JWT, a provider key, an opaque token
        (f"sent Bearer {JWT} to the gateway", "sent Bearer [REDACTED] to the gateway"),
        ("Bearer sk-proj-AbCdEf0123456789ghijKLMN", "Bearer [REDACTED]"),
        ("bearer 8f2a9c1d4e7b3a6c0d5e", "bearer [REDACTED]"),
        ("Bearer ya29.a0AfH6SMBxExampleToken", "Bearer [REDACTED]"),
        ("Bearer gho_16C7e42F292c6912E7710c838347Ae178B4a", "Bearer [REDACTED]"),
        ("Bearer abcDEFghiJK", "Bearer [REDACTED]"),  # case mixed inside a word
        ("Bearer abc.def.ghi123", "Bearer [REDACTED]"),
        # 16 characters or more: a token whatever its characters
        ("Bearer abcdefghijklmnop: 401", "Bearer [REDACTED]: 401"),
        ("Bearer ABCDEFGHIJKLMNOPQRST", "Bearer [REDACTED]"),
        ("Basic dXNlcjpwYXNzd29yZA==", "Basic [REDACTED]"),
        ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Basic [REDACTED]"),
        (
            "'Content-Type: json\\r\\nBearer abcdefghijklmnopqrst'",
            "'Content-Type: json\\r\\nBearer [REDACTED]'",
        ),
        # a header: its value goes whole, a word too
        ("Authorization: Bearer abcdefghijk", "Authorization: [REDACTED]"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED]"),
        ("proxy-authorization: Basic authentication", "proxy-authorization: [REDACTED]"),
        # JSON, and a curl command line
        ('{"Authorization": "Bearer abcdefghijk"}', '{"Authorization": "[REDACTED]"}'),
        (
            f'{{"token_type": "Bearer", "access_token": "{JWT}"}}',
            '{"token_type": "Bearer", "access_token": "[REDACTED]"}',
        ),
        (
            f"curl -H 'Authorization: Bearer {JWT}' https://api.example.test/v1",
            "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.test/v1",
        ),
        (
            'curl -H "Authorization: Bearer abcdefghijk" https://api.example.test/v1',
            'curl -H "Authorization: [REDACTED]" https://api.example.test/v1',
        ),
        (
            "curl --oauth2-bearer abcdefghij12 https://api.example.test/v1",
            "curl --oauth2-bearer [REDACTED] https://api.example.test/v1",
        ),
    ],
)
def test_a_bearer_or_basic_credential_stays_secret(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a quoted literal is a secret whatever it looks like
        (
            'OpenAI(api_key="gw_live_EEEEsecretGATEWAYkey1234567890")',
            'OpenAI(api_key="[REDACTED]")',
        ),
        ("OpenAI(api_key='ANTHROPIC_KEY')", "OpenAI(api_key='[REDACTED]')"),
        # token-shaped: a digit, or case mixed inside a word; the value ends at ")" ...
        ("connect(api_key=gw_live_EEEEsecretGATEWAYkey1234567890)", "connect(api_key=[REDACTED])"),
        ("connect(token=gw_live_EEEEsecretGATEWAYkey) as c", "connect(token=[REDACTED]) as c"),
        # ... "," ";" and whitespace
        ("login password=hunter2hunter2, retrying", "login password=[REDACTED], retrying"),
        ("secret=abcdefgh12; path=/", "secret=[REDACTED]; path=/"),
        ("api_key: abcdef1234 sent", "api_key: [REDACTED] sent"),
        # a lower-case word alone is taken as a password
        ("token=letmeinplease", "token=[REDACTED]"),
    ],
)
def test_a_key_value_ends_where_the_value_ends_and_a_literal_stays_secret(text, shown):
    assert redact_text(text) == shown


def test_redacting_twice_changes_nothing_more():
    once = redact_text("f(api_key=gw_live_EEEEsecretGATEWAYkey1234567890), token='abcdef12'")
    assert once == "f(api_key=[REDACTED]), token='[REDACTED]'"
    assert redact_text(once) == once


# ----------------------------------------------------------------------------- learned values


@pytest.fixture
def gateway_key() -> str:
    # no prefix, no shape any rule knows: only its value tells it apart
    return "gw_live_" + secrets.token_hex(16)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Bearer {key}"),
        ("authorization", "bearer   {key}  "),
        ("Proxy-Authorization", "Bearer {key}"),
        ("x-api-key", "{key}"),
        ("api-key", "{key}"),
        ("x-goog-api-key", "{key}"),
        ("anthropic-api-key", "{key}"),
        ("X-Gateway-Token", "{key}"),  # a name holding "token", as `redact_headers` blanks it
        ("Cookie", "theme=dark; session={key}"),
        # what SDKs and gateways send: Azure API Management, Azure Functions, Kong,
        # Cloudflare, a gateway's own secret header
        ("Ocp-Apim-Subscription-Key", "{key}"),
        ("x-functions-key", "{key}"),
        ("apikey", "{key}"),
        ("X-Auth", "{key}"),
        ("X-Auth-Key", "{key}"),
        ("X-Client-Secret", "{key}"),
        # the Token (Django REST framework) and ApiKey (Elasticsearch) schemes, and
        # headers named for a password or a private key
        ("Authorization", "Token {key}"),
        ("Authorization", "ApiKey {key}"),
        ("X-Db-Passwd", "{key}"),
        ("X-Pwd", "{key}"),
        ("X-Private-Key", "{key}"),
    ],
)
def test_a_credential_header_value_is_redacted_by_value_once_learned(name, value, gateway_key):
    learned = LearnedSecrets()
    text = f"client key: {gateway_key}, again {gateway_key!r}"
    assert redact_text(text, learned) == text  # no rule knows this shape
    learned.learn_header(name, value.format(key=gateway_key))
    assert redact_text(text, learned) == f"client key: {REDACTED}, again '{REDACTED}'"
    assert redact_text(text) == text  # learned by one session, not by the package


def test_a_basic_credential_is_learned_encoded_and_its_password_decoded():
    password = "pw-" + secrets.token_hex(8)
    encoded = base64.b64encode(f"bob:{password}".encode()).decode()
    learned = LearnedSecrets()
    learned.learn_header("Authorization", f"Basic {encoded}")
    assert redact_text(f"login bob/{password} ({encoded})", learned) == (
        f"login bob/{REDACTED} ({REDACTED})"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Bearer x"),  # a unit test's placeholder would redact every "x"
        ("x-api-key", "1234567"),  # under 8 characters
        ("user-agent", "OpenAI/Python 1.99.0-beta"),  # not a credential header
        ("x-ratelimit-remaining-tokens", "1234567890"),  # a count, not a token
        ("content-type", "application/json"),
    ],
)
def test_short_values_and_other_headers_are_not_learned(name, value):
    learned = LearnedSecrets()
    learned.learn_header(name, value)
    assert len(learned) == 0
    text = f"x marks {value}"
    assert redact_text(text, learned) == text


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_every_credential_query_parameter_is_learned(name, gateway_key):
    learned = LearnedSecrets()
    learned.learn_url(f"https://x.test/v1?{name}={gateway_key}")
    assert redact_text(f"sent {gateway_key}", learned) == f"sent {REDACTED}"


@pytest.mark.parametrize(
    "name", ["Ocp-Apim-Subscription-Key", "X-Auth", "x-functions-key", "apikey", "X-Auth-Key"]
)
def test_gateway_credential_headers_are_blanked_and_redacted_as_text(name):
    assert redact_headers({name: "plainvalue"}) == {name.lower(): REDACTED}
    assert redact_text(f"{name}: plainvalue") == f"{name}: {REDACTED}"


@pytest.mark.parametrize(
    "name", ["Idempotency-Key", "X-Request-Id", "x-author", "x-ratelimit-remaining-tokens"]
)
def test_headers_that_hold_no_credential_are_kept(name):
    assert redact_headers({name: "plainvalue1"}) == {name.lower(): "plainvalue1"}


def test_secret_query_parameters_are_learned_as_sent_and_decoded(gateway_key):
    learned = LearnedSecrets()
    learned.learn_url(f"https://x.test/v1/models?page=2&key={gateway_key}%2Fv2&cursor=abcdefgh1")
    assert redact_text(f"sent {gateway_key}/v2 and {gateway_key}%2Fv2", learned) == (
        f"sent {REDACTED} and {REDACTED}"
    )
    assert redact_text("cursor abcdefgh1", learned) == "cursor abcdefgh1"  # not a secret name


def test_a_longer_value_is_redacted_whole_before_a_shorter_one_inside_it(gateway_key):
    learned = LearnedSecrets()
    learned.learn_header("x-api-key", gateway_key[:12])
    learned.learn_header("x-api-key", gateway_key)
    assert redact_text(f"[{gateway_key}]", learned) == f"[{REDACTED}]"


def test_redact_value_takes_the_learned_values_too(gateway_key):
    learned = LearnedSecrets()
    learned.learn_header("api-key", gateway_key)
    assert redact_value({"a": [gateway_key, 1]}, learned) == {"a": [REDACTED, 1]}


def test_values_learned_on_other_threads_are_all_kept(gateway_key):
    # the loopback server learns on its own threads while the test's thread redacts
    learned = LearnedSecrets()
    keys = [f"{gateway_key}-{n:03d}" for n in range(200)]

    def learn(part: list[str]) -> None:
        for key in part:
            learned.learn_header("authorization", f"Bearer {key}")
            redact_text(key, learned)

    threads = [threading.Thread(target=learn, args=(keys[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(learned) == len(keys)
    assert redact_text(" ".join(keys), learned) == " ".join([REDACTED] * len(keys))


@pytest.mark.parametrize(
    "code",
    [
        'f"url was built with token={token_count} and max_tokens={max_tokens}"',
        'url = f"https://x.test/v1beta/models/g:generateContent?key={GEMINI_KEY}"',
        'f"https://x.test/v1?api_key={cfg.api_key!r}&page=2"',
        'f"api_key={settings.api_key}, retries={n}"',
        'headers = {"x-api-key": f"{self.key}"}',
        'f"{scheme}://{user}:{password}@{host}/v1"',
        'print(f"secret={secrets[0]:>8}")',
        '"password={pw}".format(pw=pw)',
    ],
)
def test_an_f_string_placeholder_is_code_not_a_secret(code):
    assert redact_text(code) == code


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('assert url.endswith("?key=abc")', 'assert url.endswith("?key=[REDACTED]")'),
        ("https://x.test/?key={a}{b}", "https://x.test/?key=[REDACTED]"),
        ("https://x.test/?key={9abc}", "https://x.test/?key=[REDACTED]"),
    ],
)
def test_a_value_that_is_not_one_placeholder_stays_secret(text, shown):
    assert redact_text(text) == shown


def test_a_password_in_a_url_is_redacted_alike_in_text_and_by_value():
    # httpx sends a URL's user info as Basic credentials, which the kit learns: a message
    # quoting the URL kept the user in one output and lost it in another
    password = "Pw" + secrets.token_hex(8)
    encoded = base64.b64encode(f"admin:{password}".encode()).decode()
    learned = LearnedSecrets()
    learned.learn_header("Authorization", f"Basic {encoded}")
    url = f"https://admin:{password}@gw.example.test/v1/x"
    shown = "https://admin:[REDACTED]@gw.example.test/v1/x"
    assert redact_text(f"failed for {url}", learned) == f"failed for {shown}"
    assert redact_text(f"failed for {url}") == f"failed for {shown}"
    assert redact_text(f"login admin:{password}", learned) == f"login admin:{REDACTED}"


def test_a_rule_compiles_its_pattern_only_when_its_markers_occur():
    # The plugin imports this module at every session's start: compiling all the rules
    # there cost ~14 M instructions, for text that mostly never reaches them.
    code = (
        "from pytest_agentfaults import _redact as r\n"
        "before = [rule[1]._compiled is None for rule in r._RULES]\n"
        "out = r.redact_text('Authorization: Bearer abcdefxyzklmnop0123')\n"
        "after = [rule[1]._compiled is not None for rule in r._RULES]\n"
        "print(all(before), out, sum(after))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    everything_lazy, *said, compiled = done.stdout.split()
    assert everything_lazy == "True"
    assert " ".join(said) == "Authorization: Bearer [REDACTED]"
    assert compiled == "2"  # the Bearer rule and the credential-header rule, no other


GATEWAY = "gw_live_3f9a0c7e5b1d4a2e8c6f"  # no shape the rules know


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a credential name ending a longer one: an environment line, an OAuth form
        (f"OPENAI_API_KEY={GATEWAY}", "OPENAI_API_KEY=[REDACTED]"),
        ("export DB_PASSWORD=Hunter2Hunter2", "export DB_PASSWORD=[REDACTED]"),
        (f"GITHUB_TOKEN: {GATEWAY}", "GITHUB_TOKEN: [REDACTED]"),
        (f"client_secret={GATEWAY}&grant_type=x", "client_secret=[REDACTED]&grant_type=x"),
        (f"{{'auth_token': '{GATEWAY}'}}", "{'auth_token': '[REDACTED]'}"),
        (f"{{'secret_key': '{GATEWAY}'}}", "{'secret_key': '[REDACTED]'}"),
        ("{'auth_token': '12345678'}", "{'auth_token': '[REDACTED]'}"),
        (f"aws_secret_access_key = {GATEWAY}", "aws_secret_access_key = [REDACTED]"),
        # a password or a private key by its other names
        (f"passwd={GATEWAY}", "passwd=[REDACTED]"),
        ("pwd: hunter2hunter", "pwd: [REDACTED]"),
        (f"db_passwd = '{GATEWAY}'", "db_passwd = '[REDACTED]'"),
        (f"export DB_PASSWD={GATEWAY}", "export DB_PASSWD=[REDACTED]"),
        (f"MYSQL_PWD={GATEWAY}", "MYSQL_PWD=[REDACTED]"),
        (f"private_key={GATEWAY}", "private_key=[REDACTED]"),
        (f"PRIVATE_KEY={GATEWAY}", "PRIVATE_KEY=[REDACTED]"),
        (f'{{"private-key": "{GATEWAY}"}}', '{"private-key": "[REDACTED]"}'),
        # the Token and ApiKey schemes keep their name, as Bearer does
        (f"Authorization: Token {GATEWAY}", "Authorization: Token [REDACTED]"),
        (f"[('Authorization', 'Token {GATEWAY}')]", "[('Authorization', 'Token [REDACTED]')]"),
        (
            "Authorization: ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==",
            "Authorization: ApiKey [REDACTED]",
        ),
        (f"sent apikey {GATEWAY}", "sent apikey [REDACTED]"),
        # a private key's PEM block, whole, escaped in a repr or not
        (
            "key='-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA7\\n-----END RSA PRIVATE KEY-----'",
            "key='[REDACTED]'",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\nkqhkiG9w0B\n-----END PRIVATE KEY-----\nok",
            "[REDACTED]\nok",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\\nProc-Type: 4,ENCRYPTED\\nDEK-Info: AES-128-CBC,3F1"
            "\\n\\nMIIEpAIBAAKCAQEA7\\n-----END RSA PRIVATE KEY-----",
            "[REDACTED]",
        ),
        # cut before its END line: to the end of the base64
        ("-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQ...", "[REDACTED]..."),
        # JSON inside JSON: a tool call's arguments in a request body, escaped
        (
            f'"arguments": "{{\\"api_key\\": \\"{GATEWAY}\\"}}"',
            '"arguments": "{\\"api_key\\": \\"[REDACTED]\\"}"',
        ),
        (
            '"arguments": "{\\"password\\": \\"hunter2hunter\\"}"',
            '"arguments": "{\\"password\\": \\"[REDACTED]\\"}"',
        ),
        (f'{{\\"x-api-key\\": \\"{GATEWAY}\\"}}', '{\\"x-api-key\\": \\"[REDACTED]\\"}'),
    ],
)
def test_a_credential_name_inside_a_longer_name_or_escaped_json_keeps_its_value_secret(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # the repr of a multi-line string: a line that starts with a key
        (
            "'keys:\\nsk-proj-AbCdEf0123456789ghijKLMN\\n'",
            "'keys:\\n[REDACTED]\\n'",
        ),
        (
            f"'Content-Type: json\\r\\nBearer {GATEWAY}'",
            "'Content-Type: json\\r\\nBearer [REDACTED]'",
        ),
        # percent-encoded JSON in a query or a form body
        ("q=%22sk-proj-AbCdEf0123456789ghijKLMN%22", "q=%22[REDACTED]%22"),
        ("\\tAIzaSyA-1234567890abcdefghijklmnopqrs", "\\t[REDACTED]"),
    ],
)
def test_a_key_shape_after_an_escape_is_redacted(text, shown):
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "task-proj-AbCdEf0123456789ghijKLMN",
        "max_tokens=4096",
        "total_tokens: 123456",
        "OPENAI_API_KEY = os.environ['OPENAI_API_KEY']",
        "client_secret=settings.client_secret,",
        'GITHUB_TOKEN: str = ""',
        "max_token: 100000",  # a count
        '"eos_token": "<|endoftext|>", "slow_first_token": "timeout"',  # no credentials
        "self._token: object = None",
        # a credential header's name inside a longer Python name is code
        'session_cookie: str = "abc"',
        "client = Client(proxy_authorization=auth_header)",
        'x_session_cookie: Cookie = jar.get("session")',
        # pwd, passwd, private_key as code, and words after Token or ApiKey
        "pwd = os.getcwd()",
        "subprocess.run(cmd, cwd=pwd, check=True)",
        "self.pwd = pwd",
        "PWD=/home/user/project",
        'pwd = "/home/user/project"',
        "passwd = getpass.getpass()",
        "private_key = serialization.load_pem_private_key(data, password=None)",
        "def sign(private_key: rsa.RSAPrivateKey) -> bytes:",
        "Token limit exceeded after 4096000 tokens",
        "ApiKey authentication failed: unauthorized",
        "the token 12345678 of the prompt",
        "-----BEGIN PUBLIC KEY-----",
        # met in google-auth's source: a key loaded by a call, the PEM markers a parser
        # looks for, and a class led by an acronym
        'private_key = rsa.key.PrivateKey.load_pkcs1(key_bytes, format="DER")',
        '_PKCS1_MARKER = ("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----")',
        '# "-----BEGIN EC PRIVATE KEY-----...",',
        "def update_token_expiry(self, token: OAuthToken) -> None:",
    ],
)
def test_a_longer_name_or_word_that_is_no_credential_is_kept(text):
    assert redact_text(text) == text


def test_a_tool_calls_text_arguments_named_as_credentials_are_learned():
    learned = LearnedSecrets()
    learned.learn_arguments(
        {
            "password": "Hunter2Hunter2x",
            "api_key": GATEWAY,
            "password_file": "keys/Hunter2Hunter2y",  # where a credential is
            "query": "Hunter2Hunter2z",  # no credential's name
            "token": 12345678901234567890,  # not text
            "db_passwd": "Hunter2Hunter2pw",
            "private_key": "MIIEvQIBADANBgkq",
            "pwd": "/home/user/project/src",  # a shell tool's working directory: a path
        }
    )
    assert set(learned.values) == {
        GATEWAY,
        "Hunter2Hunter2pw",
        "MIIEvQIBADANBgkq",
        "Hunter2Hunter2x",
    }
