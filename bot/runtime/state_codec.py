"""RunState wire format: schema versions, migrations, and parsing of payloads.

A payload is a JSON object. `$schemaVersion` says which shape it has:

- the current version is read strictly (every field present and well typed);
- an older supported version is migrated step by step through `MIGRATIONS` first;
- a newer or unknown version is refused with SchemaVersionError naming both versions;
- no `$schemaVersion` at all is the legacy bare-dict form of builds before versioning:
  every field is read by name with a safe default and unknown keys are ignored.

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
from typing import Any, cast

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
)
from bot.runtime.digest import execution_key
from bot.runtime.model import Item
from bot.runtime.state_checks import (
    last_turn_index,
    read_dict,
    read_int,
    read_list,
    read_opt_str,
    read_required,
    read_str,
)

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
_LEGACY_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(kw_only=True, slots=True)
class StateFields:
    """Everything a RunState holds, as parsed from a payload."""

    run_id: str
    agent_name: str
    agent_version: str
    current_turn: int
    max_turns: int
    history: list[Item]
    context: dict[str, Any] | None
    pending: list[PendingCall]
    decisions: dict[str, Decision]
    always: dict[str, Decision]
    approval_metadata: dict[str, ApprovalMetadata]


def parse_payload(payload: Any) -> StateFields:
    """Parse a decoded JSON payload of any supported (or the legacy) form."""
    if not isinstance(payload, dict):
        raise RunStateError(f"a RunState payload is a JSON object, got {type(payload).__name__}")
    if SCHEMA_VERSION_KEY not in payload:
        return _parse_legacy(payload)
    version = payload[SCHEMA_VERSION_KEY]
    if version == CURRENT_SCHEMA_VERSION:
        return _parse_current(payload)
    if not isinstance(version, str) or version not in SUPPORTED_SCHEMA_VERSIONS:
        raise SchemaVersionError(
            f"RunState payload has $schemaVersion {version!r}, but this build reads "
            f"version {CURRENT_SCHEMA_VERSION!r} (supported: "
            f"{', '.join(SUPPORTED_SCHEMA_VERSIONS)}); upgrade approvals-bot to load it"
        )
    return _parse_current(_migrate(payload, version))


def _migrate(payload: dict[str, Any], version: str) -> dict[str, Any]:
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


# -- decisions and metadata -----------------------------------------------------------


def _decision(value: Any, path: str) -> Decision:
    data = read_dict(value, path)
    kind = data.get("kind")
    if kind == "approved":
        return ApprovedCall()
    if kind == "rejected":
        return RejectedCall(message=read_str(data.get("message"), f"{path}.message"))
    if kind == "verified_result":
        return VerifiedResult(result=read_str(data.get("result"), f"{path}.result"))
    if kind == "retry":
        return RetryCall()
    if kind == "abort":
        return AbortCall()
    raise RunStateError(f"RunState field '{path}.kind' is not a known decision: {kind!r}")


def _timestamp(value: Any, path: str) -> datetime:
    try:
        moment = datetime.fromisoformat(read_str(value, path))
    except ValueError as error:
        raise RunStateError(f"RunState field {path!r} is not an ISO timestamp") from error
    # Naive timestamps only come from legacy builds, which wrote UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _metadata(value: Any, path: str, *, legacy: bool) -> ApprovalMetadata:
    data = read_dict(value, path)
    if legacy and data.get("timestamp") is None:
        stamp = _LEGACY_EPOCH  # legacy builds could omit it; the epoch marks "unknown"
    else:
        stamp = _timestamp(data.get("timestamp"), f"{path}.timestamp")
    return ApprovalMetadata(
        approver_id=read_opt_str(data.get("approver_id"), f"{path}.approver_id"),
        reason=read_opt_str(data.get("reason"), f"{path}.reason"),
        timestamp=stamp,
    )


def _pending_call(
    value: Any, path: str, *, run_id: str, turn: int | None, legacy: bool
) -> PendingCall:
    data = read_dict(value, path)
    call_id = read_str(data.get("tool_call_id"), f"{path}.tool_call_id")
    key = data.get("execution_key")
    if key is None and legacy and turn is not None:
        key = execution_key(run_id, turn, call_id)
    status = data.get("status", "approval") if legacy else data.get("status")
    if status not in ("approval", "uncertain"):
        raise RunStateError(f"RunState field '{path}.status' must be approval or uncertain")
    arguments = data.get("arguments", {}) if legacy else data.get("arguments")
    return PendingCall(
        tool_call_id=call_id,
        tool_name=read_str(data.get("tool_name"), f"{path}.tool_name"),
        arguments=read_dict(arguments, f"{path}.arguments"),
        execution_key=read_str(key, f"{path}.execution_key"),
        status=status,
    )


# -- the current version --------------------------------------------------------------


_CURRENT_FIELDS = itemgetter(
    "run_id", "agent_name", "agent_version", "current_turn", "max_turns", "history",
    "context", "pending_calls", "decisions", "always", "approval_metadata",
)  # fmt: skip
# The field types of a well-formed payload: one set lookup checks them all (context is
# an object or null).
_CURRENT_SHAPES = frozenset(
    (str, str, str, int, int, list, context, list, dict, dict, dict)
    for context in (dict, type(None))
)
_PENDING_FIELDS = itemgetter("tool_call_id", "tool_name", "arguments", "execution_key", "status")
_PENDING_TYPES = (str, str, dict, str, str)
_STATUSES = frozenset({"approval", "uncertain"})


CurrentValues = tuple[Any, ...]
"""The eleven top-level values of a well-formed current payload, in _CURRENT_FIELDS order."""


def current_values(payload: Any) -> CurrentValues | None:
    """The top-level values of a current-version payload whose fields all have the right
    types, in one itemgetter call and one set lookup; None for anything else (another
    version, the legacy form, or a problem `parse_payload` will name)."""
    if type(payload) is not dict or payload.get(SCHEMA_VERSION_KEY) != CURRENT_SCHEMA_VERSION:
        return None
    try:
        values: CurrentValues = _CURRENT_FIELDS(payload)
    except KeyError:
        return None
    if tuple(map(type, values)) not in _CURRENT_SHAPES or values[3] < 0 or values[4] < 1:
        return None
    return values


def _parse_current(payload: dict[str, Any]) -> StateFields:
    """Strict read of the current version: the careful field-by-field reads explain a
    problem the fast check found."""
    values = current_values(payload)
    if values is None:
        _explain_bad_top_level(payload)
        raise AssertionError("unreachable: _explain_bad_top_level raises")  # pragma: no cover
    run_id, name, version, turn, max_turns, history, context, pending, decisions, always, notes = (
        values
    )
    return StateFields(
        run_id=run_id,
        agent_name=name,
        agent_version=version,
        current_turn=turn,
        max_turns=max_turns,
        history=history,
        context=context,
        pending=list(current_pending(pending).values()),
        decisions=current_decisions(decisions, "decisions"),
        always=current_decisions(always, "always"),
        approval_metadata=current_metadata(notes),
    )


def current_pending(items: list[Any]) -> dict[str, PendingCall]:
    """Pending calls by tool call id; a malformed one is named by its index."""
    calls: dict[str, PendingCall] = {}
    for index, item in enumerate(items):
        try:
            values = _PENDING_FIELDS(item) if type(item) is dict else None
        except KeyError:  # a missing field: _pending_call names it
            values = None
        if (
            values is not None
            and tuple(map(type, values)) == _PENDING_TYPES
            and values[4] in _STATUSES
        ):
            call_id, tool_name, arguments, key, status = values
            calls[call_id] = PendingCall(
                tool_call_id=call_id,
                tool_name=tool_name,
                arguments=arguments,
                execution_key=key,
                status=status,
            )
        else:
            path = f"pending_calls[{index}]"
            call = _pending_call(item, path, run_id="", turn=None, legacy=False)
            calls[call.tool_call_id] = call
    return calls


def current_decisions(items: dict[str, Any], path: str) -> dict[str, Decision]:
    return {key: _decision(item, f"{path}.{key}") for key, item in items.items()} if items else {}


def current_metadata(items: dict[str, Any]) -> dict[str, ApprovalMetadata]:
    if not items:
        return {}
    return {
        key: _metadata(item, f"approval_metadata.{key}", legacy=False)
        for key, item in items.items()
    }


def _explain_bad_top_level(payload: dict[str, Any]) -> None:
    """Raise RunStateError naming the first missing or ill-typed top-level field."""
    read_str(read_required(payload, "run_id"), "run_id")
    read_str(read_required(payload, "agent_name"), "agent_name")
    read_str(read_required(payload, "agent_version"), "agent_version")
    read_int(read_required(payload, "current_turn"), "current_turn", minimum=0)
    read_int(read_required(payload, "max_turns"), "max_turns", minimum=1)
    read_list(read_required(payload, "history"), "history")
    context = read_required(payload, "context")
    if context is not None:
        read_dict(context, "context")
    read_list(read_required(payload, "pending_calls"), "pending_calls")
    for key in ("decisions", "always", "approval_metadata"):
        read_dict(read_required(payload, key), key)
    raise RunStateError("RunState payload is malformed")  # pragma: no cover


# -- the legacy (unversioned) form ----------------------------------------------------


def _parse_legacy(payload: dict[str, Any]) -> StateFields:
    """Builds before versioning wrote a bare dict: pending calls as `interruptions`
    (or `pending_calls`), decisions as `approved_tools` / `rejected_tools` lists of call
    ids (rejections possibly as {call id: message}). Missing fields take safe defaults."""
    run_id = read_str(payload.get("run_id") or uuid.uuid4().hex, "run_id")
    history = cast(list[Item], read_list(payload.get("history", []), "history"))
    turn = last_turn_index(history)
    context = payload.get("context")
    raw_pending = payload.get("pending_calls", payload.get("interruptions", []))
    fields = StateFields(
        run_id=run_id,
        agent_name=read_str(payload.get("agent_name", ""), "agent_name"),
        agent_version=read_str(payload.get("agent_version", "1"), "agent_version"),
        current_turn=read_int(payload.get("current_turn", 0), "current_turn", minimum=0),
        max_turns=read_int(payload.get("max_turns", DEFAULT_MAX_TURNS), "max_turns", minimum=1),
        history=history,
        context=None if context is None else read_dict(context, "context"),
        pending=[
            _pending_call(item, f"interruptions[{i}]", run_id=run_id, turn=turn, legacy=True)
            for i, item in enumerate(read_list(raw_pending, "interruptions"))
        ],
        decisions={},
        always={},
        approval_metadata={},
    )
    for call_id in read_list(payload.get("approved_tools", []), "approved_tools"):
        fields.decisions[read_str(call_id, "approved_tools[]")] = ApprovedCall()
    rejected = payload.get("rejected_tools", [])
    if isinstance(rejected, dict):
        for call_id, message in rejected.items():
            text = read_opt_str(message, f"rejected_tools.{call_id}") or DEFAULT_REJECTION_MESSAGE
            fields.decisions[call_id] = RejectedCall(message=text)
    else:
        for call_id in read_list(rejected, "rejected_tools"):
            key = read_str(call_id, "rejected_tools[]")
            fields.decisions[key] = RejectedCall(message=DEFAULT_REJECTION_MESSAGE)
    metadata = read_dict(payload.get("approval_metadata", {}), "approval_metadata")
    for call_id, item in metadata.items():
        path = f"approval_metadata.{call_id}"
        fields.approval_metadata[call_id] = _metadata(item, path, legacy=True)
    return fields
