"""The one canonical byte form of a tool call's arguments, and the call's keyed digest.

The run core (bot.runtime: journal claims, the ledger) and the review layer (bot.review:
the card's digest, the approval row) must agree byte for byte on what "the same
arguments" means, and they may not import each other, so both use this leaf module.

- `canonical_arguments`: JSON with sorted keys, compact separators (",", ":") and UTF-8
  kept as is (ensure_ascii=False), encoded as UTF-8.
- `call_digest`: HMAC-SHA256 hex, keyed with the run's own random digest key, over a
  domain tag, the agent's name and version, the tool name, the call's execution key and
  the canonical arguments (0x1f-separated, the arguments last). A card shows it next to
  redacted arguments; unkeyed, it would let anyone with a wordlist confirm a hidden
  value (`Summer2024!`) from the card, an audit export or a copied database. Binding the
  execution key makes every call's digest unique, so even someone who can start runs
  cannot compare the digest of his own call with a victim's card.
- `legacy_arguments_digest`: the unkeyed SHA-256 of the canonical arguments that builds
  before keyed digests used. Only calls that a state of that time was already waiting
  on keep it (RunState's `legacy_digest_calls`); never use it for anything new.
- `digests_equal`: the constant-time comparison every digest check uses.

Only values that survive a stored RunState unchanged are accepted, so equal bytes mean
equal arguments and a call cannot change between approval and execution: string keys;
str, bool, None, finite floats, lists (tuples are written as lists); integers within the
64-bit range (-2**63 .. 2**64-1) that the RunState codec (orjson) can write; text that is
valid Unicode (no lone surrogates). Anything else is an InputError naming the place.

stdlib json, not orjson: orjson writes NaN and Infinity as null (a silent change), and
formats some floats differently (1e-07 vs 1e-7), which would change existing digests.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from bot.errors import InputError

__all__ = [
    "CALL_DIGEST_DOMAIN",
    "DIGEST_KEY_BYTES",
    "INT_MAX",
    "INT_MIN",
    "call_digest",
    "canonical_arguments",
    "digests_equal",
    "legacy_arguments_digest",
]

CALL_DIGEST_DOMAIN = b"approvals-bot call digest v2"
DIGEST_KEY_BYTES = 32

INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
# One encoder for every call: `json.dumps` with options builds a new one each time.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_arguments(arguments: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes of a call's arguments (InputError when not plain JSON)."""
    if not isinstance(arguments, Mapping):
        raise InputError(f"arguments must be a JSON object, not {type(arguments).__name__}")
    plain = dict(arguments)
    _check_json(plain, "$")
    try:
        text = _ENCODER.encode(plain)
    except ValueError as error:  # NaN or Infinity
        raise InputError(f"arguments must be finite JSON numbers: {error}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate such as "\ud800"
        raise InputError(
            f"arguments contain text that is not valid Unicode at character {error.start}"
        ) from None


def call_digest(
    key: bytes,
    *,
    agent_name: str,
    agent_version: str,
    tool_name: str,
    execution_key: str,
    arguments: Mapping[str, Any],
) -> str:
    """The call's keyed digest (64 lowercase hex; see the module doc). ValueError when an
    identity field holds the separator (it would make two calls' messages alike)."""
    if len(key) != DIGEST_KEY_BYTES:
        raise ValueError(f"a digest key has {DIGEST_KEY_BYTES} bytes, not {len(key)}")
    identity = (agent_name, agent_version, tool_name, execution_key)
    head = "\x1f".join(identity)
    if head.count("\x1f") != len(identity) - 1:
        names = ("agent_name", "agent_version", "tool_name", "execution_key")
        bad = next(name for name, value in zip(names, identity, strict=True) if "\x1f" in value)
        raise ValueError(f"{bad} holds the digest separator 0x1f")
    message = b"\x1f".join((CALL_DIGEST_DOMAIN, head.encode(), canonical_arguments(arguments)))
    return hmac.digest(key, message, "sha256").hex()


def legacy_arguments_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 hex of `canonical_arguments(arguments)`: the digest of builds before keyed
    digests, kept only for the calls such a state was waiting on."""
    return hashlib.sha256(canonical_arguments(arguments)).hexdigest()


def digests_equal(first: str, second: str) -> bool:
    """Constant-time equality of two digests (hex text)."""
    return hmac.compare_digest(first.encode("utf-8"), second.encode("utf-8"))


def _check_json(value: Any, path: str) -> None:
    """Refuse what JSON (or the RunState codec) cannot carry faithfully."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"arguments at {path}: key {key!r} is not a string")
            _check_json(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]")
    elif isinstance(value, bool) or value is None or isinstance(value, str | float):
        return
    elif isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise InputError(f"arguments at {path}: integer {value} is outside the 64-bit range")
    else:
        raise InputError(f"arguments at {path}: {type(value).__name__} is not JSON")
