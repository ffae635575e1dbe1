"""Slack request signature verification (v0 HMAC-SHA256), strict and total.

Runs before Bolt sees a request: every bad, missing, stale or malformed signature is an
InputError naming the problem (the server answers 401), never an exception that Bolt
would turn into a 500 (stock Bolt calls `int()` on the timestamp header unguarded).
"""

from __future__ import annotations

import hashlib
import hmac
import re

from bot.errors import InputError

SIGNATURE_TOLERANCE_SECONDS = 300
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


def compute_signature(*, signing_secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Slack-Signature` value Slack would send for `body` at `timestamp`."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(signing_secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def verify_signature(
    *,
    signing_secret: str,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    now: float,
    tolerance: int = SIGNATURE_TOLERANCE_SECONDS,
) -> None:
    """Return if the request is Slack's; otherwise raise InputError saying why."""
    if not timestamp:
        raise InputError("missing X-Slack-Request-Timestamp header")
    if not _TIMESTAMP.fullmatch(timestamp):
        raise InputError("X-Slack-Request-Timestamp is not a number of seconds")
    if abs(now - int(timestamp)) > tolerance:
        raise InputError(f"request timestamp is more than {tolerance} s away from now")
    if not signature:
        raise InputError("missing X-Slack-Signature header")
    if not _SIGNATURE.fullmatch(signature):
        raise InputError("X-Slack-Signature is not a v0 HMAC-SHA256 signature")
    expected = compute_signature(signing_secret=signing_secret, timestamp=timestamp, body=body)
    if not hmac.compare_digest(expected, signature):
        raise InputError("X-Slack-Signature does not match the request body")
