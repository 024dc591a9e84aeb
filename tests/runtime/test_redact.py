"""Secrets never reach a trace: the redaction rules."""

from __future__ import annotations

import pytest

from pytest_agentfaults.runtime.redact import REDACTED, redact_headers, redact_text


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


@pytest.mark.parametrize("shortest", ["token=abcdef", "token:abcdef", "Basic abcdefgh"])
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
