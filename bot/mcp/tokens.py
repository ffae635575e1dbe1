"""Client tokens and call keys.

A client proves who it is with a bearer token the gateway generated
(`approvals-bot mcp token NAME`); the gateway's file keeps only its SHA-256 digest, so
the file confirms no token. The token decides the requester: nothing the client sends
besides it (a header, a name in the request) does.

A call's key is what makes a retry "the same call": HMAC-SHA256 over the exposed tool
name and the canonical arguments, keyed with a secret derived from the client's token.
It is stored in clear (bot.store: `mcp_calls`), and without the token it confirms no
guess of the arguments; two clients never share one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from bot.canonical import canonical_arguments

TOKEN_PREFIX = "abmcp_"
TOKEN_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_CALL_KEY_DOMAIN = b"approvals-bot mcp call key v1"
_MAX_TOKEN_CHARS = 512

C = TypeVar("C")


def new_token() -> str:
    """A fresh client token: 256 random bits, URL-safe, with a recognisable prefix."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What the gateway's file keeps of a token: `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (None: none given)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > _MAX_TOKEN_CHARS:
        return None
    return token


def client_for(token: str, clients: Iterable[tuple[Iterable[str], C]]) -> C | None:
    """The client one of whose digests is the token's (each compared in constant time)."""
    presented = token_digest(token).encode()
    found: C | None = None
    for digests, client in clients:
        for digest in digests:
            if hmac.compare_digest(presented, digest.encode()):
                found = client
    return found


def call_key_secret(token: str) -> bytes:
    """The client's secret for its call keys (derived from the token, not its digest)."""
    return hmac.digest(token.encode("utf-8"), _CALL_KEY_DOMAIN, "sha256")


def call_key(secret: bytes, tool: str, arguments: Mapping[str, Any]) -> str:
    """The key of a call: which tool, with which arguments (InputError for arguments
    without a canonical form)."""
    message = tool.encode("utf-8") + b"\x1f" + canonical_arguments(arguments)
    return hmac.digest(secret, message, "sha256").hex()
