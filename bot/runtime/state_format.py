"""The RunState wire format: schema versions, migrations, and reading a payload.

A payload is a JSON object. `$schemaVersion` says which shape it has:

- the current version is read strictly (every field present and well typed);
- an older supported version is migrated step by step through `MIGRATIONS` first;
- a newer or unknown version is refused with SchemaVersionError naming both versions;
- no `$schemaVersion` at all is the legacy bare-dict form of builds before versioning:
  it is upgraded to the current form first, every field read by name with a safe
  default, unknown keys ignored.

So every payload is checked by one reader, `read_payload`, field by field with the
checks of bot.runtime.state_fields.

Bump `CURRENT_SCHEMA_VERSION` (and add its summary, and a migration from the previous
one) whenever a serialized field is added or changes meaning. Released fixtures under
tests/fixtures/run_state/ are never edited.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from bot.canonical import DIGEST_KEY_BYTES
from bot.errors import RunStateError, SchemaVersionError
from bot.runtime.decisions import (
    DEFAULT_REJECTION_MESSAGE,
    ApprovalMetadata,
    Decision,
    PendingCall,
    RejectedCall,
    VerifiedResult,
    execution_key,
)
from bot.runtime.model import Item, last_turn_index, unanswered_calls
from bot.runtime.state_fields import (
    count,
    optional_str,
    read_decisions,
    read_digest_key,
    read_history,
    read_legacy_calls,
    read_metadata,
    read_pending,
    typed,
)

SCHEMA_VERSION_KEY = "$schemaVersion"
CURRENT_SCHEMA_VERSION = "1.1"
SUPPORTED_SCHEMA_VERSIONS: Mapping[str, str] = MappingProxyType(
    {
        "1.0": (
            "First versioned form: run and agent identity (name, version), turn counters, "
            "history items, pending calls with execution keys and status, decisions, "
            "always-rules per tool, approval audit metadata, serialized context."
        ),
        "1.1": (
            "Adds the run's digest key (32 random bytes, hex) that keys every call digest "
            "(HMAC-SHA256 over agent, tool, execution key and arguments), and "
            "legacy_digest_calls: calls a 1.0 state was waiting on, whose digest stays "
            "the unkeyed SHA-256 of their arguments so their approvals still match."
        ),
    }
)
# Older supported version -> (the version it upgrades to, the upgrade). Each step is a
# pure function on the payload dict; chains run until CURRENT_SCHEMA_VERSION.
Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _add_digest_key(payload: dict[str, Any]) -> dict[str, Any]:
    """1.0 -> 1.1: a fresh digest key; the calls the state waits on keep their digest."""
    return {
        **payload,
        "digest_key": new_digest_key().hex(),
        "legacy_digest_calls": _unanswered_ids(payload.get("history")),
    }


def _unanswered_ids(history: Any) -> list[str]:
    """Ids of the last turn's unanswered calls in a payload not yet checked (the reader
    checks the history right after, and names what is wrong there)."""
    if type(history) is not list:
        return []
    try:
        _, calls = unanswered_calls(history)
        return [call["id"] for call in calls if type(call.get("id")) is str]
    except (KeyError, TypeError, AttributeError):
        return []


MIGRATIONS: dict[str, tuple[str, Migration]] = {"1.0": ("1.1", _add_digest_key)}

DEFAULT_MAX_TURNS = 10
_LEGACY_EPOCH = datetime(1970, 1, 1, tzinfo=UTC).isoformat()  # "unknown" decision time
_NO_VERSION = object()


def new_digest_key() -> bytes:
    """A run's digest key: random, never shown, kept only inside the sealed state."""
    return secrets.token_bytes(DIGEST_KEY_BYTES)


@dataclass(kw_only=True, slots=True)
class StateFields:
    """Everything a RunState holds, as read from a payload."""

    run_id: str
    agent_name: str
    agent_version: str
    current_turn: int
    max_turns: int
    history: list[Item]
    context: dict[str, Any] | None
    pending: dict[str, PendingCall]
    decisions: dict[str, Decision]
    always: dict[str, Decision]
    approval_metadata: dict[str, ApprovalMetadata]
    digest_key: bytes
    legacy_digest_calls: set[str]


def read_payload(payload: Any) -> StateFields:
    """Read a decoded JSON payload of any supported version, or the legacy form."""
    if type(payload) is not dict:
        raise RunStateError(f"a RunState payload is a JSON object, got {type(payload).__name__}")
    version = payload.get(SCHEMA_VERSION_KEY, _NO_VERSION)
    if version is _NO_VERSION:
        payload = _migrate(_from_legacy(payload), "1.0")
    elif version != CURRENT_SCHEMA_VERSION:
        payload = _migrate(payload, version)
    return _read_current(payload)


def _migrate(payload: dict[str, Any], version: Any) -> dict[str, Any]:
    if not isinstance(version, str) or version not in SUPPORTED_SCHEMA_VERSIONS:
        raise SchemaVersionError(
            f"RunState payload has $schemaVersion {version!r}, but this build reads "
            f"version {CURRENT_SCHEMA_VERSION!r} (supported: "
            f"{', '.join(SUPPORTED_SCHEMA_VERSIONS)}); upgrade approvals-bot to load it"
        )
    seen = {version}
    while version != CURRENT_SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise RunStateError(
                f"no migration from $schemaVersion {version!r} to {CURRENT_SCHEMA_VERSION!r}"
            )
        version, upgrade = MIGRATIONS[version]
        if version in seen:
            raise RunStateError(f"migrations loop at $schemaVersion {version!r}")
        seen.add(version)
        payload = {**upgrade(payload), SCHEMA_VERSION_KEY: version}
    return payload


# -- the current version --------------------------------------------------------------

_TOP_LEVEL = itemgetter(
    "run_id", "agent_name", "agent_version", "current_turn", "max_turns", "history",
    "context", "pending_calls", "decisions", "always", "approval_metadata", "digest_key",
    "legacy_digest_calls",
)  # fmt: skip


def _read_current(payload: dict[str, Any]) -> StateFields:
    try:
        values = _TOP_LEVEL(payload)
    except KeyError as missing:
        raise RunStateError(
            f"RunState payload lacks the required field {missing.args[0]!r}"
        ) from None
    (
        run_id, name, version, turn, max_turns, history, context, pending, decisions, always,
        notes, digest_key, legacy,
    ) = values  # fmt: skip
    return StateFields(
        run_id=typed(run_id, str, "run_id"),
        agent_name=typed(name, str, "agent_name"),
        agent_version=typed(version, str, "agent_version"),
        current_turn=count(turn, "current_turn", minimum=0),
        max_turns=count(max_turns, "max_turns", minimum=1),
        history=read_history(history),
        context=None if context is None else typed(context, dict, "context"),
        pending=read_pending(typed(pending, list, "pending_calls")),
        decisions=read_decisions(decisions, "decisions"),
        always=read_decisions(always, "always"),
        approval_metadata=read_metadata(notes),
        digest_key=read_digest_key(digest_key),
        legacy_digest_calls=read_legacy_calls(legacy),
    )


# -- writing --------------------------------------------------------------------------


def decisions_to_json(decisions: Mapping[str, Decision]) -> dict[str, Any]:
    return {key: _decision_to_json(value) for key, value in decisions.items()}


def _decision_to_json(decision: Decision) -> dict[str, Any]:
    match decision:
        case RejectedCall(message=message):
            return {"kind": "rejected", "message": message}
        case VerifiedResult(result=result):
            return {"kind": "verified_result", "result": result}
        case _:
            return {"kind": decision.kind}


def metadata_to_json(metadata: Mapping[str, ApprovalMetadata]) -> dict[str, Any]:
    return {
        key: {
            "approver_id": note.approver_id,
            "reason": note.reason,
            "timestamp": note.timestamp.isoformat(),
        }
        for key, note in metadata.items()
    }


# -- the legacy (unversioned) form ----------------------------------------------------


def _from_legacy(old: dict[str, Any]) -> dict[str, Any]:
    """The 1.0 form of a bare dict from a build before versioning.

    Such builds wrote pending calls as `interruptions` (or `pending_calls`) without a
    status (approval) or execution key (derived from the last turn), and decisions as
    `approved_tools` / `rejected_tools` lists of call ids (rejections possibly as
    {call id: message}). Missing fields take safe defaults; the current reader then
    checks every field."""
    run_id = old.get("run_id") or uuid.uuid4().hex
    history = old.get("history", [])
    turn = last_turn_index(history) if type(history) is list else None
    pending = old.get("pending_calls", old.get("interruptions", []))
    if type(pending) is list:
        pending = [_legacy_pending(item, run_id, turn) for item in pending]
    notes = old.get("approval_metadata", {})
    if type(notes) is dict:
        notes = {key: _legacy_note(item) for key, item in notes.items()}
    return {
        "run_id": run_id,
        "agent_name": old.get("agent_name", ""),
        "agent_version": old.get("agent_version", "1"),
        "current_turn": old.get("current_turn", 0),
        "max_turns": old.get("max_turns", DEFAULT_MAX_TURNS),
        "history": history,
        "context": old.get("context"),
        "pending_calls": pending,
        "decisions": _legacy_decisions(old),
        "always": {},
        "approval_metadata": notes,
    }


def _legacy_pending(item: Any, run_id: Any, turn: int | None) -> Any:
    if type(item) is not dict:
        return item
    call_id, key = item.get("tool_call_id"), item.get("execution_key")
    if key is None and turn is not None and type(call_id) is str:
        key = execution_key(run_id, turn, call_id)
    return {
        **item,
        "arguments": item.get("arguments", {}),
        "execution_key": key,
        "status": item.get("status", "approval"),
    }


def _legacy_note(item: Any) -> Any:
    if type(item) is dict and item.get("timestamp") is None:
        return {**item, "timestamp": _LEGACY_EPOCH}  # legacy builds could omit it
    return item


def _legacy_decisions(old: dict[str, Any]) -> dict[str, Any]:
    decisions: dict[str, Any] = {}
    for call_id in typed(old.get("approved_tools", []), list, "approved_tools"):
        decisions[typed(call_id, str, "approved_tools[]")] = {"kind": "approved"}
    rejected = old.get("rejected_tools", [])
    if type(rejected) is dict:
        for call_id, message in rejected.items():
            text = optional_str(message, f"rejected_tools.{call_id}")
            decisions[call_id] = {"kind": "rejected", "message": text or DEFAULT_REJECTION_MESSAGE}
        return decisions
    for call_id in typed(rejected, list, "rejected_tools"):
        key = typed(call_id, str, "rejected_tools[]")
        decisions[key] = {"kind": "rejected", "message": DEFAULT_REJECTION_MESSAGE}
    return decisions
