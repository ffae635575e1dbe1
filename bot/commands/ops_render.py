"""Pure formatting for the operator commands: records to JSON-ready dicts and text."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from bot.credentials import redact
from bot.errors import InputError
from bot.policy import parse_duration
from store.api import ApprovalRecord, LedgerEntry, RunRecord


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """ISO 8601 (a naive time is UTC; a date means its midnight UTC) or an age: 30m, 24h, 7d."""
    value = text.strip()
    try:
        age = parse_duration(value, allow_zero=True, longest=None)
    except ValueError:  # not an age: perhaps a time
        age = None
    if age is not None:
        try:
            return (now or datetime.now(UTC)) - age
        except OverflowError:
            raise InputError(f"--since {text!r} reaches back before the year 1") from None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"--since {text!r} is neither an ISO 8601 time (2026-11-29T12:00Z) "
            "nor an age like 30m, 24h or 7d"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _jsonable(record: Any) -> dict[str, Any]:
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in asdict(record).items()
    }


def run_json(run: RunRecord) -> dict[str, Any]:
    return _jsonable(run)


def run_detail_json(
    run: RunRecord,
    approvals: Sequence[ApprovalRecord],
    ledger: Sequence[LedgerEntry],
    state_json: str | None,
    *,
    reveal: bool,
) -> dict[str, Any]:
    """The run, its approvals and ledger, and (if loaded) its state, redacted unless reveal."""
    detail: dict[str, Any] = {
        "run": run_json(run),
        "approvals": [_approval_json(approval) for approval in approvals],
        "ledger": [_jsonable(entry) for entry in ledger],
    }
    if state_json is not None:
        state = json.loads(state_json)
        if reveal:
            detail["state"], detail["redacted_paths"] = state, []
        else:
            detail["state"], detail["redacted_paths"] = redact(state)
    return detail


def _approval_json(approval: ApprovalRecord) -> dict[str, Any]:
    data = _jsonable(approval)
    with contextlib.suppress(json.JSONDecodeError):  # else shown as the stored text
        data["snapshot"] = json.loads(approval.snapshot)
    return data


def render_runs_table(runs: Sequence[RunRecord]) -> str:
    if not runs:
        return "no runs"
    rows = [("RUN", "STATUS", "VER", "AGENT", "REQUESTER", "UPDATED")]
    rows += [
        (
            run.run_id,
            run.status,
            str(run.version),
            f"{run.agent_name}@{run.agent_version}",
            run.requester or "-",
            run.updated_at.strftime("%Y-%m-%d %H:%M:%SZ"),
        )
        for run in runs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def render_run_detail(detail: dict[str, Any]) -> str:
    run = detail["run"]
    thread = f"{run['channel']} {run['thread_ts']}" if run["thread_ts"] else "-"
    lines = [
        f"run {run['run_id']}: {run['status']} (version {run['version']})",
        f"  agent {run['agent_name']}@{run['agent_version']}, state schema "
        f"{run['schema_version']}, key {run['key_id']}, digest {run['blob_digest'][:16]}...",
        f"  requester {run['requester'] or '-'}, thread {thread}",
        f"  created {run['created_at']}, updated {run['updated_at']}",
        f"approvals ({len(detail['approvals'])}):",
        *(_approval_line(approval) for approval in detail["approvals"]),
        f"ledger ({len(detail['ledger'])}):",
        *(
            f"  {entry['execution_key']}  {entry['tool_name']}  {entry['state']}  "
            f"attempt {entry['attempt']}"
            for entry in detail["ledger"]
        ),
    ]
    if "state" in detail:
        paths = detail["redacted_paths"]
        lines.append(f"state (redacted {len(paths)} value(s)):" if paths else "state:")
        lines.append(json.dumps(detail["state"], indent=2, ensure_ascii=False))
    return "\n".join(lines)


def _approval_line(approval: dict[str, Any]) -> str:
    line = f"  {approval['approval_id']}  {approval['tool_name']}  {approval['status']}"
    if approval["decider"]:
        line += f" by {approval['decider']} at {approval['decided_at']}"
    if approval["reason"]:
        line += f": {approval['reason']!r}"
    if approval["revoked_by"]:
        line += f" (revoked by {approval['revoked_by']} at {approval['revoked_at']})"
    return line
