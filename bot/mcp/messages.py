"""What people and the client are told about a gated MCP call: the lines its card shows
beside the arguments, the line its thread gets at the end, the note a result carries
when an approver changed the arguments, and why an approved call did not run (its tool
redefined: its approval void; its upstream unable to list it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from bot.credentials import redact
from bot.errors import UpstreamError
from bot.mcp.calls import CallRecord
from bot.runtime import PendingCall

DESCRIPTION_SHOWN = 300


def call_notes(record: CallRecord) -> Sequence[str]:
    description = str(record.definition.get("description") or "(no description)")
    if len(description) > DESCRIPTION_SHOWN:
        description = description[: DESCRIPTION_SHOWN - 1] + "…"
    notes = [
        f"MCP client {record.client}, upstream {record.upstream}, tool {record.tool}: {description}"
    ]
    if record.changed:
        notes.append(
            f"Asked again: the upstream changed this tool's {', '.join(record.changed)} "
            "after it was first asked; the earlier approval is void."
        )
    return notes


def with_change_note(
    result: dict[str, Any], record: CallRecord, call: PendingCall
) -> dict[str, Any]:
    """The result, told first that an approver changed the arguments (when one did)."""
    if call.arguments == record.asked:
        return result
    shown, _ = redact(call.arguments)
    note = (
        "[approvals-bot: an approver changed this call's arguments before approving it; "
        f"it ran with {orjson.dumps(shown).decode()}]"
    )
    content = result.get("content")
    blocks = list(content) if isinstance(content, list) else []
    return {**result, "content": [{"type": "text", "text": note}, *blocks]}


def summary(record: CallRecord) -> str:
    """The run's answer in its thread: what happened, never the result itself."""
    where = f"`{record.exposed}` (upstream `{record.upstream}`)"
    client = f"MCP client `{record.client}`"
    match record.outcome:
        case "executed":
            return f"{where} ran; its result went back to {client}."
        case "upstream_error":
            return f"{where} ran and answered with an error; it went back to {client}."
        case "rejected":
            return f"{where} was not run: rejected. {client} was told."
        case "reconciled":
            return f"{where}: a person recorded its outcome; {client} gets it."
        case _:
            return f"{where} was not run; {client} was told why."


def redefined_why(redefined: CallRecord) -> str:
    """Why an approved call is asked again: its tool was redefined after the approval
    (`redefined`: the call under the new definition, naming what changed)."""
    what = f"its {', '.join(redefined.changed)}" if redefined.changed else "its definition"
    return (
        f"upstream {redefined.upstream} changed {redefined.tool} ({what}) after it was "
        "approved; it is asked again"
    )


def not_listed(record: CallRecord, problem: UpstreamError | None) -> str:
    """Why an approved call was not run: its upstream could not list it."""
    if problem is None:
        return f"Not run: upstream {record.upstream} no longer lists {record.tool}."
    return f"Not run: upstream {record.upstream} could not be reached ({problem})."
