"""Reading an `ExternalRunState`'s JSON: every field checked, one by one, with an error
naming the field (RunStateError), as bot.runtime.state_fields does for a RunState; a
schema this build does not read is a SchemaVersionError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.errors import RunStateError, SchemaVersionError
from bot.runtime.decisions import PendingCall
from bot.runtime.engine import ENGINE_KEY, EngineInfo
from bot.runtime.state_fields import (
    count,
    optional_str,
    read_decisions,
    read_digest_key,
    read_metadata,
    read_pending,
    typed,
)
from bot.runtime.state_format import SCHEMA_VERSION_KEY

EXTERNAL_SCHEMA_VERSION = "engine-1"


def read_fields(payload: Any) -> dict[str, Any]:
    """The ExternalRunState constructor's arguments from a parsed payload."""
    typed(payload, dict, "the state")
    version = payload.get(SCHEMA_VERSION_KEY)
    if version != EXTERNAL_SCHEMA_VERSION:
        raise SchemaVersionError(
            f"engine run state schema {version!r} is not supported by this build "
            f"(it reads {EXTERNAL_SCHEMA_VERSION!r}); upgrade approvals-bot"
        )
    engine = typed(payload.get(ENGINE_KEY), dict, ENGINE_KEY)
    pending = read_pending(typed(payload.get("pending_calls"), list, "pending_calls"))
    decisions = read_decisions(payload.get("decisions"), "decisions")
    unknown = sorted(set(decisions) - set(pending))
    if unknown:
        raise RunStateError(f"decisions for calls that are not pending: {unknown}")
    return {
        "run_id": typed(payload.get("run_id"), str, "run_id"),
        "agent_name": typed(payload.get("agent_name"), str, "agent_name"),
        "agent_version": typed(payload.get("agent_version"), str, "agent_version"),
        "engine": EngineInfo(
            name=typed(engine.get("name"), str, "engine.name"),
            version=typed(engine.get("version"), str, "engine.version"),
            schema_version=typed(engine.get("schema_version"), str, "engine.schema_version"),
        ),
        "engine_state": payload.get("engine_state"),
        "pauses": count(payload.get("pauses"), "pauses", minimum=0),
        "pending": pending.values(),
        "decisions": decisions,
        "approval_metadata": read_metadata(payload.get("approval_metadata")),
        "digest_key": read_digest_key(payload.get("digest_key")),
        "final_output": optional_str(payload.get("final_output"), "final_output"),
        "new_input": optional_str(payload.get("new_input"), "new_input"),
        "notes": _read_notes(payload.get("call_notes")),
        "requested": _requested(payload.get("requested_arguments"), pending),
    }


def _read_notes(value: Any) -> dict[str, list[str]]:
    """The stored notes (absent in states written before notes: none)."""
    if value is None:
        return {}
    notes = typed(value, dict, "call_notes")
    read: dict[str, list[str]] = {}
    for call_id, lines in notes.items():
        items = typed(lines, list, f"call_notes.{call_id}")
        read[call_id] = [typed(line, str, f"call_notes.{call_id}[]") for line in items]
    return read


def _requested(value: Any, pending: Mapping[str, PendingCall]) -> dict[str, dict[str, Any]]:
    """The asked-with arguments of amended calls (absent in states written before
    approve with changes was offered to engines: none)."""
    if value is None:
        return {}
    requested: dict[str, dict[str, Any]] = typed(value, dict, "requested_arguments")
    for call_id, arguments in requested.items():
        typed(arguments, dict, f"requested_arguments.{call_id}")
    unknown = sorted(set(requested) - set(pending))
    if unknown:
        raise RunStateError(f"requested arguments for calls that are not pending: {unknown}")
    return requested
