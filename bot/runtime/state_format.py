"""The RunState wire format: schema versions, migrations, and reading a payload.

A payload is a JSON object. `$schemaVersion` says which shape it has:

- the current version is read strictly (every field present and well typed);
- an older supported version is migrated step by step through `MIGRATIONS` first;
- a newer or unknown version is refused with SchemaVersionError naming both versions;
- no `$schemaVersion` at all is the legacy bare-dict form of builds before versioning:
  it is upgraded to the current form first, every field read by name with a safe
  default, unknown keys ignored.

So every payload is checked by one reader, `read_payload`. Loading is the hot path of
resuming: each check is a plain type test made once, and the check that fails raises
the RunStateError naming the field (`history[3].tool_calls[0].id`).

Bump `CURRENT_SCHEMA_VERSION` (and add its summary, and a migration from the previous
one) whenever a serialized field is added or changes meaning. Released fixtures under
tests/fixtures/run_state/ are never edited.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from types import MappingProxyType
from typing import Any, NoReturn, cast

from bot.errors import RunStateError, SchemaVersionError
from bot.runtime.decisions import (
    DEFAULT_REJECTION_MESSAGE,
    AbortCall,
    ApprovalMetadata,
    ApprovedCall,
    Decision,
    PendingCall,
    RejectedCall,
    RetryCall,
    VerifiedResult,
    execution_key,
)
from bot.runtime.model import Item, last_turn_index

SCHEMA_VERSION_KEY = "$schemaVersion"
CURRENT_SCHEMA_VERSION = "1.0"
SUPPORTED_SCHEMA_VERSIONS: Mapping[str, str] = MappingProxyType(
    {
        "1.0": (
            "First versioned form: run and agent identity (name, version), turn counters, "
            "history items, pending calls with execution keys and status, decisions, "
            "always-rules per tool, approval audit metadata, serialized context."
        ),
    }
)
# Older supported version -> (the version it upgrades to, the upgrade). Each step is a
# pure function on the payload dict; chains run until CURRENT_SCHEMA_VERSION.
Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[str, tuple[str, Migration]] = {}

DEFAULT_MAX_TURNS = 10
_LEGACY_EPOCH = datetime(1970, 1, 1, tzinfo=UTC).isoformat()  # "unknown" decision time
_NO_VERSION = object()
_TYPE_NAMES = {str: "a string", int: "an integer", list: "an array", dict: "an object"}
_STATUSES = ("approval", "uncertain")  # a tuple: `in` on an unhashable value is just False


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


def read_payload(payload: Any) -> StateFields:
    """Read a decoded JSON payload of any supported version, or the legacy form."""
    if type(payload) is not dict:
        raise RunStateError(f"a RunState payload is a JSON object, got {type(payload).__name__}")
    version = payload.get(SCHEMA_VERSION_KEY, _NO_VERSION)
    if version is _NO_VERSION:
        payload = _from_legacy(payload)
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


# -- field checks ---------------------------------------------------------------------


def _refuse(path: str, expected: str, value: Any) -> NoReturn:
    raise RunStateError(f"RunState field {path!r} must be {expected}, got {type(value).__name__}")


def _typed(value: Any, kind: type, path: str) -> Any:
    if type(value) is not kind:
        _refuse(path, _TYPE_NAMES[kind], value)
    return value


def _count(value: Any, path: str, *, minimum: int) -> int:
    if type(value) is not int:
        _refuse(path, "an integer", value)
    if value < minimum:
        raise RunStateError(f"RunState field {path!r} must be at least {minimum}, got {value}")
    return value


def _optional_str(value: Any, path: str) -> str | None:
    return None if value is None else cast(str, _typed(value, str, path))


# -- the current version --------------------------------------------------------------

_TOP_LEVEL = itemgetter(
    "run_id", "agent_name", "agent_version", "current_turn", "max_turns", "history",
    "context", "pending_calls", "decisions", "always", "approval_metadata",
)  # fmt: skip


def _read_current(payload: dict[str, Any]) -> StateFields:
    try:
        values = _TOP_LEVEL(payload)
    except KeyError as missing:
        raise RunStateError(
            f"RunState payload lacks the required field {missing.args[0]!r}"
        ) from None
    run_id, name, version, turn, max_turns, history, context, pending, decisions, always, notes = (
        values
    )
    return StateFields(
        run_id=_typed(run_id, str, "run_id"),
        agent_name=_typed(name, str, "agent_name"),
        agent_version=_typed(version, str, "agent_version"),
        current_turn=_count(turn, "current_turn", minimum=0),
        max_turns=_count(max_turns, "max_turns", minimum=1),
        history=read_history(history),
        context=None if context is None else _typed(context, dict, "context"),
        pending=_read_pending(_typed(pending, list, "pending_calls")),
        decisions=_read_decisions(decisions, "decisions"),
        always=_read_decisions(always, "always"),
        approval_metadata=_read_metadata(notes),
    )


class _BadItem(Exception):
    """A history item failed a check: the field (relative to the item) and what it must be."""

    def __init__(self, field: str, expected: str, value: Any) -> None:
        super().__init__(field)
        self.field, self.expected, self.value = field, expected, value


def read_history(value: Any, path: str = "history") -> list[Item]:
    """The history items, checked in one pass without copies; the first bad field is
    named by its path."""
    items = _typed(value, list, path)
    item: Any = None
    try:
        for item in items:
            kind = item["type"]
            if kind == "tool_result":
                if type(item["tool_call_id"]) is not str:
                    raise _BadItem("tool_call_id", "a string", item["tool_call_id"])
                if type(item["name"]) is not str:
                    raise _BadItem("name", "a string", item["name"])
                if type(item["content"]) is not str:
                    raise _BadItem("content", "a string", item["content"])
                if type(item["is_error"]) is not bool:
                    raise _BadItem("is_error", "a boolean", item["is_error"])
            elif kind == "assistant":
                content = item["content"]
                if content is not None and type(content) is not str:
                    raise _BadItem("content", "a string or null", content)
                calls = item["tool_calls"]
                if type(calls) is not list:
                    raise _BadItem("tool_calls", "an array", calls)
                for call in calls:
                    if (
                        type(call) is not dict
                        or type(call.get("id")) is not str
                        or type(call.get("name")) is not str
                        or type(call.get("arguments")) is not dict
                    ):
                        raise _BadItem(
                            f"tool_calls[{_index(calls, call)}]",
                            "an object with a string id and name and an object of arguments",
                            call,
                        )
            elif kind != "user":
                raise _BadItem("type", "user, assistant or tool_result", kind)
            elif type(item["content"]) is not str:
                raise _BadItem("content", "a string", item["content"])
    except _BadItem as bad:
        _refuse(f"{path}[{_index(items, item)}].{bad.field}", bad.expected, bad.value)
    except TypeError:  # item["type"] of something that is not an object
        _refuse(f"{path}[{_index(items, item)}]", "an object", item)
    except KeyError as missing:
        where = f"{path}[{_index(items, item)}].{missing.args[0]}"
        raise RunStateError(f"RunState field {where!r} is missing") from None
    return cast(list[Item], items)


def _index(items: list[Any], item: Any) -> int:
    return next(index for index, candidate in enumerate(items) if candidate is item)


def _read_pending(items: list[Any]) -> dict[str, PendingCall]:
    """Pending calls by tool call id, in the model's order."""
    calls: dict[str, PendingCall] = {}
    for index, data in enumerate(items):
        if type(data) is not dict:
            _refuse(f"pending_calls[{index}]", "an object", data)
        call_id, name, arguments, key, status = (
            data.get("tool_call_id"),
            data.get("tool_name"),
            data.get("arguments"),
            data.get("execution_key"),
            data.get("status"),
        )
        if type(call_id) is not str:
            _refuse(f"pending_calls[{index}].tool_call_id", "a string", call_id)
        if status not in _STATUSES:
            _refuse(f"pending_calls[{index}].status", "approval or uncertain", status)
        if type(name) is not str:
            _refuse(f"pending_calls[{index}].tool_name", "a string", name)
        if type(arguments) is not dict:
            _refuse(f"pending_calls[{index}].arguments", "an object", arguments)
        if type(key) is not str:
            _refuse(f"pending_calls[{index}].execution_key", "a string", key)
        calls[call_id] = PendingCall(
            tool_call_id=call_id,
            tool_name=name,
            arguments=arguments,
            execution_key=key,
            status=status,
        )
    return calls


def _read_decisions(value: Any, path: str) -> dict[str, Decision]:
    items = _typed(value, dict, path)
    return {key: _read_decision(item, f"{path}.{key}") for key, item in items.items()}


def _read_decision(value: Any, path: str) -> Decision:
    data = _typed(value, dict, path)
    kind = data.get("kind")
    if kind == "approved":
        return ApprovedCall()
    if kind == "rejected":
        return RejectedCall(message=_typed(data.get("message"), str, f"{path}.message"))
    if kind == "verified_result":
        return VerifiedResult(result=_typed(data.get("result"), str, f"{path}.result"))
    if kind == "retry":
        return RetryCall()
    if kind == "abort":
        return AbortCall()
    raise RunStateError(f"RunState field '{path}.kind' is not a known decision: {kind!r}")


def _read_metadata(value: Any) -> dict[str, ApprovalMetadata]:
    items = _typed(value, dict, "approval_metadata")
    metadata: dict[str, ApprovalMetadata] = {}
    for key, item in items.items():
        path = f"approval_metadata.{key}"
        data = _typed(item, dict, path)
        metadata[key] = ApprovalMetadata(
            approver_id=_optional_str(data.get("approver_id"), f"{path}.approver_id"),
            reason=_optional_str(data.get("reason"), f"{path}.reason"),
            timestamp=_read_timestamp(data.get("timestamp"), f"{path}.timestamp"),
        )
    return metadata


def _read_timestamp(value: Any, path: str) -> datetime:
    try:
        moment = datetime.fromisoformat(_typed(value, str, path))
    except ValueError as error:
        raise RunStateError(f"RunState field {path!r} is not an ISO timestamp") from error
    # Naive timestamps only come from legacy builds, which wrote UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


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
    """The current form of a bare dict from a build before versioning.

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
    for call_id in _typed(old.get("approved_tools", []), list, "approved_tools"):
        decisions[_typed(call_id, str, "approved_tools[]")] = {"kind": "approved"}
    rejected = old.get("rejected_tools", [])
    if type(rejected) is dict:
        for call_id, message in rejected.items():
            text = _optional_str(message, f"rejected_tools.{call_id}")
            decisions[call_id] = {"kind": "rejected", "message": text or DEFAULT_REJECTION_MESSAGE}
        return decisions
    for call_id in _typed(rejected, list, "rejected_tools"):
        key = _typed(call_id, str, "rejected_tools[]")
        decisions[key] = {"kind": "rejected", "message": DEFAULT_REJECTION_MESSAGE}
    return decisions
