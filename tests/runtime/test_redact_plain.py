"""What a test that does not use the kit gets redacted, and which sent values are learned.

`redact_shapes` is the high-precision half of `redact_text`: a provider key's own shape
and the session's learned keys, no rule that reads context (``password=``, ``Bearer``, a
URL's query). `LearnedSecrets` learns a value only if it looks like a key, not a word.
"""

from __future__ import annotations

import pytest

from pytest_agentfaults._redact import REDACTED, LearnedSecrets, redact_shapes, redact_text

# Each a secret wherever it appears: the shape alone says so.
SHAPED = [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5q",
    "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5q",
    "sk-Ab3dEf6hIj9kLm2nOp5q",
    "AKIAABCDEFGHIJKLMNOP",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "ghp_" + "a1B2c3D4e5" * 4,
    "xoxb-1234567890-abcdefghij",
    "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
]

# Each redacted by a context rule in a kit test, and left as written in a plain one.
CONTEXT = [
    "{'password': 'letmein'}",
    "password=letmein2",
    "Authorization: Bearer abcdefghij1234",
    "'Bearer abcdefghij12345'",
    "Basic YWRtaW46cGFzc3dvcmQ=",
    "https://example.test/v1/models?key=0123456789abcdef0123456789abcdef",
    "https://example.test/v1/models?page=2&cursor=0123456789abcdef0123456789abcdef",
    "https://bob:hunter2hunter2@db.test/x",
    "api_key=abcdef123456",
    "x-api-key: abcdef123456",
    "token: abc123XYZ987",
    # the schemes and names beyond Bearer, Basic, password
    "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
    "[('Authorization', 'Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b')]",
    "Authorization: ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==",
    "passwd=Hunter2Hunter2",
    "pwd: hunter2hunter",
    "private_key=abcdef123456",
    "export PRIVATE_KEY=abcdef123456",
    "db_passwd = 'letmein'",
    "https://example.test/login?pwd=letmein2",
]


@pytest.mark.parametrize("key", SHAPED)
def test_a_provider_key_is_redacted_by_its_shape_alone(key):
    assert redact_shapes(f"the key is {key}.") == f"the key is {REDACTED}."
    assert redact_text(f"the key is {key}.") == f"the key is {REDACTED}."


@pytest.mark.parametrize("text", CONTEXT)
def test_no_context_rule_applies_to_a_plain_test(text):
    assert redact_shapes(text) == text
    assert redact_text(text) != text  # and a kit test's reports still redact it


def test_learned_keys_are_redacted_in_a_plain_test_too():
    learned = LearnedSecrets()
    learned.learn_header("x-api-key", "gw_live_8f2a9c1d4e")
    assert redact_shapes("sent gw_live_8f2a9c1d4e, password=x", learned) == (
        f"sent {REDACTED}, password=x"
    )


def test_short_text_is_returned_as_it_is():
    assert redact_shapes("") == ""
    assert redact_shapes("sk-") == "sk-"


# The bar: at least 12 characters with two of lower-case, upper-case and digits, or at
# least 20 characters not all digits. Punctuation is no class: words joined by "-", "_"
# or ":" are still words.
@pytest.mark.parametrize(
    "value",
    [
        "password",  # a word
        "12345678",  # digits: a count, a total, an id
        "secret123",  # a word and a number, under 12
        "test-key",  # words
        "letmein-please",  # words joined, 14 characters of one class
        "admin:password",  # Basic's decoded pair of words
        "default_api_key_x",  # 17 characters, lower-case and "_" only
        "1234567890123456789012",  # 22 digits
        "Password12",  # two classes, 10 characters
    ],
)
def test_a_value_that_looks_like_a_word_is_not_learned(value):
    learned = LearnedSecrets()
    learned.learn_header("x-api-key", value)
    learned.learn_url(f"https://x.test/?key={value}")
    assert len(learned) == 0
    assert redact_shapes(f"got {value}", learned) == f"got {value}"


@pytest.mark.parametrize(
    "value",
    [
        "gw_live_8f2a9c1d4e",  # 18: lower-case and digits
        "Password1234",  # 12: the shortest with two classes
        "ABCDEFGH2345",  # 12: upper-case and digits
        "correcthorsebatterystaple",  # 25 of one class: long enough to be no word
        "pw-0123456789abcdef",  # 19: lower-case and digits
    ],
)
def test_a_value_that_looks_like_a_key_is_learned(value):
    learned = LearnedSecrets()
    learned.learn_header("x-api-key", value)
    assert len(learned) == 1
    assert redact_shapes(f"got {value}", learned) == f"got {REDACTED}"


def test_basic_credentials_are_learned_only_where_they_look_like_keys():
    learned = LearnedSecrets()
    learned.learn_header("Authorization", "Basic YWRtaW46cGFzc3dvcmQ=")  # admin:password
    # the encoded form is token-shaped; the pair and the password are words
    assert learned.values == ("YWRtaW46cGFzc3dvcmQ=",)


def test_the_environments_keys_are_learned_by_their_variables_names():
    environ = {
        "OPENAI_API_KEY": "k3yOfOpenAI-000111222",
        "AZURE_OPENAI_KEY": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "GITHUB_TOKEN": "ghp_000000000000aaaaBBBB",
        "DB_PASSWORD": "Tr0ub4dor&3horse",
        "TOKENIZERS_PARALLELISM": "false",  # a setting, not a key (too short a value)
        "GOOGLE_APPLICATION_CREDENTIALS_FILE": "abcDEF123456789xyz",  # names a file
        "PASSWORD_STORE_DIR": "/home/user/.password-store",  # a path
        "SSH_AUTH_SOCK": "tmpSSHagent1234567890",  # not a credential's name
        "API_KEY_URL": "HTTPSexample123456789",  # where a key is fetched
        "HOME": "homeDirectory123456789",
        "DB_PASSWD": "Tr0ub4dor&3passwd",
        "MYSQL_PWD": "Tr0ub4dor&3mysql",
        "PRIVATE_KEY": "MIIEvQIBADANBgkqhkiG9w0B",
        "PWD": "/home/user/project",  # the working directory, a path
        "OLDPWD": "/home/user",
    }
    learned = LearnedSecrets()
    learned.learn_environment(environ)
    assert set(learned.values) == {
        environ[name]
        for name in (
            "OPENAI_API_KEY",
            "AZURE_OPENAI_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "DB_PASSWD",
            "MYSQL_PWD",
            "PRIVATE_KEY",
        )
    }
    text = f"config: {environ['AZURE_OPENAI_KEY']} at {environ['PASSWORD_STORE_DIR']}"
    assert redact_shapes(text, learned) == f"config: {REDACTED} at /home/user/.password-store"
