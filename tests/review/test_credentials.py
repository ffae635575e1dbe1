"""Credential patterns: each shape is found and redacted in place; look-alikes are not."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.credentials import (
    REDACTED,
    find_secrets,
    is_secret_key,
    redact,
    redact_text,
)

# Assembled from parts so this file itself does not look like it holds credentials.
SLACK_BOT = "xoxb-" + "2718281828-3141592653-AbCdEfGhIjKlMnOp"
SLACK_USER = "xoxp-" + "1234567890-abcdefghijkl"
SLACK_APP = "xapp-" + "1-A012345-6789012345-abcdef0123"
SLACK_WEBHOOK = "https://hooks.slack.com/services/" + "T0000/B0000/XXXXXXXXXXXXXXXX"
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SESSION_KEY_ID = "ASIA" + "Y3FDSNDKFKSIDJSW"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
OPENAI_KEY = "sk-" + "abc123DEF456ghi789JKL012mno345PQR"
OPENAI_PROJECT_KEY = "sk-proj-" + "Ab3_cD4-eF5gH6iJ7kL8mN9oP0qR1sT2"
ANTHROPIC_KEY = "sk-ant-" + "api03-AbCdEf0123456789_GhIjKlMnOp"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_OAUTH = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN "
    + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8\n-----END RSA PRIVATE KEY-----"
)
OPENSSH = (
    "-----BEGIN "
    + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
)

WHOLE_VALUES = [
    SLACK_BOT,
    SLACK_USER,
    SLACK_APP,
    SLACK_WEBHOOK,
    AWS_KEY_ID,
    AWS_SESSION_KEY_ID,
    OPENAI_KEY,
    OPENAI_PROJECT_KEY,
    ANTHROPIC_KEY,
    GITHUB_TOKEN,
    GITHUB_OAUTH,
    GITHUB_PAT,
    JWT,
    PEM,
    OPENSSH,
]


@pytest.mark.parametrize("secret", WHOLE_VALUES)
def test_each_credential_shape_is_recognised_and_replaced_whole(secret: str) -> None:
    assert redact_text(secret) == REDACTED


@pytest.mark.parametrize("secret", WHOLE_VALUES)
def test_a_credential_inside_a_sentence_is_cut_out_and_the_rest_kept(secret: str) -> None:
    text = f"please use {secret} for the deploy"
    assert redact_text(text) == f"please use {REDACTED} for the deploy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"aws_secret_access_key = {AWS_SECRET}", f"aws_secret_access_key = {REDACTED}"),
        (f'"SecretAccessKey": "{AWS_SECRET}"', f'"SecretAccessKey": "{REDACTED}"'),
        ("Authorization: Bearer abc.def-ghi_jkl123", f"Authorization: {REDACTED}"),
        ("curl -H 'bearer 9f8e7d6c5b4a39281706'", f"curl -H 'bearer {REDACTED}'"),
        (
            "postgres://app:hunter2@db.internal:5432/pay",
            f"postgres://app:{REDACTED}@db.internal:5432/pay",
        ),
        ("db_password=hunter2 region=eu", f"db_password={REDACTED} region=eu"),
        ('{"password": "hunter2", "user": "ann"}', f'{{"password": "{REDACTED}", "user": "ann"}}'),
        ("{'api_key': 'k-42'}", f"{{'api_key': '{REDACTED}'}}"),
        ("clientSecret: s3cr3t-value", f"clientSecret: {REDACTED}"),
        ("session_token: abc123xyz; next", f"session_token: {REDACTED}; next"),
        (
            '{"type": "service_account", "private_key": "' + PEM.replace("\n", "\\n") + '"}',
            '{"type": "service_account", "private_key": "' + REDACTED + '"}',
        ),
        ("-----BEGIN " + "PRIVATE KEY-----\nMIIE (cut off", REDACTED),  # unterminated: to the end
    ],
)
def test_secrets_in_key_context_keep_their_key_visible(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "deploy payments 1.2.3",
        "token_count=512",
        "max_tokens: 4096",
        "Bearer of bad news",
        "bearer authentication is configured",
        "sk-learn-is-a-python-library",
        "https://example.com/a:b@c",  # no scheme userinfo before ://
        "https://example.com/path",
        "version=1.2.3",
        "AKIA is a prefix",
        "eyJ alone",
        "the key is in the vault",
        "ghp_short",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "Session: morning, Pass: 3, Auth: enabled",  # secret as key names, not in prose
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "PASSWORD",
        "db_password",
        "dbPassword",
        "passwd",
        "pwd",
        "secret",
        "client_secret",
        "clientSecret",
        "token",
        "OPS_API_TOKEN",
        "access_token",
        "refreshToken",
        "api_key",
        "apiKey",
        "x-api-key",
        "APIKEY",
        "access_key",
        "aws_secret_access_key",
        "private_key",
        "authorization",
        "Authorization",
        "credential",
        "credentials",
        "session_id",
        "sessionToken",
        "cookie",
        "Set-Cookie",
        "passphrase",
    ],
)
def test_secret_key_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    [
        "token_count",
        "max_tokens",
        "tokens",
        "tokenizer",
        "token_type",
        "token_url",
        "password_length",
        "password_policy",
        "secret_name",
        "session_timeout",
        "cookie_name",
        "service",
        "version",
        "key",
        "value",
        "monkey",
        "",
    ],
)
def test_names_about_a_secret_are_not_secret(name: str) -> None:
    assert not is_secret_key(name)


def test_find_secrets_reports_json_paths_of_values_only_by_default() -> None:
    data = {
        "tenant": "acme",
        "api": {"token": SLACK_BOT, "retries": 3},
        "hosts": ["a", f"b via {OPENAI_KEY}"],
        "password": "not-shaped-like-a-credential",
        "odd key": [{"x y": JWT}],
        "note": None,
    }
    assert find_secrets(data) == ["$.api.token", "$.hosts[1]", "$['odd key'][0]['x y']"]
    assert "$.password" in find_secrets(data, include_secret_keys=True)


def test_redact_replaces_by_key_and_by_value_and_reports_paths() -> None:
    data = {
        "service": "payments",
        "password": "hunter2",
        "empty_secret": None,
        "nested": {"headers": {"Authorization": "Basic dXNlcjpwYXNz"}, "items": [1, SLACK_BOT]},
        "env": [{"name": "DB_PASSWORD", "value": "hunter2"}, {"name": "REGION", "value": "eu"}],
        "message": f"use {GITHUB_TOKEN} then stop",
    }
    redacted, paths = redact(data)

    assert redacted == {
        "service": "payments",
        "password": REDACTED,
        "empty_secret": None,
        "nested": {"headers": {"Authorization": REDACTED}, "items": [1, REDACTED]},
        "env": [{"name": "DB_PASSWORD", "value": REDACTED}, {"name": "REGION", "value": "eu"}],
        "message": f"use {REDACTED} then stop",
    }
    assert paths == [
        "$.password",
        "$.nested.headers.Authorization",
        "$.nested.items[1]",
        "$.env[0].value",
        "$.message",
    ]
    assert data["password"] == "hunter2"  # the input is not modified


def test_a_whole_subtree_under_a_secret_key_is_replaced() -> None:
    redacted, paths = redact({"credentials": {"user": "u", "pass": "p"}, "ok": True})
    assert redacted == {"credentials": REDACTED, "ok": True}
    assert paths == ["$.credentials"]


def test_a_credential_used_as_a_key_is_redacted_too() -> None:
    redacted, paths = redact({SLACK_BOT: "owner"})
    assert redacted == {REDACTED: "owner"}
    assert paths == [f"$['{REDACTED}']"]


def test_a_custom_marker() -> None:
    assert redact({"token": "x"}, "***") == ({"token": "***"}, ["$.token"])


@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(WHOLE_VALUES),
    st.text(alphabet=" .,;\n", max_size=3),
)
def test_an_embedded_credential_never_survives_redaction(
    prefix: str, secret: str, gap: str
) -> None:
    text = f"{prefix} {gap}{secret}{gap} {prefix}"
    redacted = redact_text(text)
    assert secret not in redacted
    assert REDACTED in redacted
