"""How records lie in the database, for every backend: column lists, times as text, and
row -> record conversion.

Times are stored as fixed-width UTC text ('2026-11-29T14:23:22.000000Z'), so comparing
and ordering them in SQL is time order, and the audit chain hashes the exact text that
is stored (a copy to another backend verifies unchanged). A row is anything indexed by
column name (sqlite3.Row, asyncpg.Record).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from bot.errors import InputError
from store.records import (
    ApprovalRecord,
    AuditEvent,
    EngineStamp,
    LedgerEntry,
    RunOrigin,
    RunRecord,
    RunStatus,
    SealCheck,
    StandingDecision,
    Verdict,
    VoteRecord,
)


class Row(Protocol):
    """One result row, read by column name or position (sqlite3.Row, asyncpg.Record)."""

    def __getitem__(self, key: Any, /) -> Any: ...


def by_name(row: Row) -> Row:
    """`row`, cheap to read by column name: a sqlite3.Row as a dict. sqlite3.Row finds a
    name by comparing it with each column's name in turn, so a record's two dozen
    columns read by name cost hundreds of comparisons (callgrind: ~0.5 M instructions per
    approved call); the dict costs one pass over the row. Other rows (asyncpg.Record, a
    dict) are returned as they are."""
    if type(row) is sqlite3.Row:
        return dict(zip(row.keys(), row, strict=True))
    return row


def where_all(conditions: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """`WHERE c1 AND c2 ...` over the conditions (each with one `?`) whose value is not
    None, and those values as its parameters; ("", []) when none applies."""
    applied = {clause: value for clause, value in conditions.items() if value is not None}
    where = f"WHERE {' AND '.join(applied)}" if applied else ""
    return where, list(applied.values())


RUN_COLUMNS = (
    "run_id, agent_name, agent_version, schema_version, status, version, key_id, "
    "blob_digest, channel, thread_ts, requester, created_at, updated_at, origin, task, "
    "purged_at, engine, engine_version, engine_schema_version, needs_migration, held_by, "
    "hold_reason"
)
APPROVAL_COLUMNS = (
    "approval_id, run_id, tool_call_id, tool_name, arguments_digest, snapshot, status, "
    "requester, decider, reason, message, created_at, decided_at, expires_at, revoked_at, "
    "revoked_by, slack_channel, slack_ts, required_approvals, remind_at, reminded_at, "
    "revoke_reason, amended_by, execution_key, policy_fingerprint, snapshot_seal_key_id, "
    "snapshot_seal"
)
VOTE_COLUMNS = "approval_id, voter, decision, digest, reason, at"
STANDING_COLUMNS = (
    "approval_id, run_id, tool_name, decision, decider, reason, message, created_at, "
    "revoked_at, revoked_by, revoke_reason"
)
EVENT_COLUMNS = "seq, kind, actor, run_id, approval_id, detail, at, prev_hash, hash"
RUN_PREFIX = "run__"
"""How a run's columns are named beside an approval's in one row (`APPROVAL_AND_RUN`)."""
APPROVAL_AND_RUN_COLUMNS = ", ".join(
    [f"a.{name} AS {name}" for name in APPROVAL_COLUMNS.split(", ")]
    + [f"r.{name} AS {RUN_PREFIX}{name}" for name in RUN_COLUMNS.split(", ")]
)
"""An approval's columns and its run's (prefixed), read from `approvals a LEFT JOIN runs r`."""
_RUN_NAMES = RUN_COLUMNS.split(", ")


def to_db(moment: datetime) -> str:
    """'2026-11-29T14:23:22.000000Z'; naive datetimes are refused (their zone is unknown)."""
    if moment.tzinfo is UTC:  # the clock's and from_db's: nothing to convert (every vote)
        return moment.isoformat(timespec="microseconds")[:-6] + "Z"
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InputError(f"timestamp {moment.isoformat()} has no time zone; give an aware UTC time")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def to_db_optional(moment: datetime | None) -> str | None:
    return None if moment is None else to_db(moment)


def from_db(text: str) -> datetime:
    return datetime.fromisoformat(text)  # reads the trailing Z as UTC (Python >= 3.11)


def from_db_optional(text: str | None) -> datetime | None:
    return None if text is None else from_db(text)


def row_to_run(row: Row) -> RunRecord:
    row = by_name(row)
    return RunRecord(
        run_id=row["run_id"],
        agent_name=row["agent_name"],
        agent_version=row["agent_version"],
        schema_version=row["schema_version"],
        status=cast(RunStatus, row["status"]),
        version=int(row["version"]),
        key_id=row["key_id"],
        blob_digest=row["blob_digest"],
        channel=row["channel"],
        thread_ts=row["thread_ts"],
        requester=row["requester"],
        created_at=from_db(row["created_at"]),
        updated_at=from_db(row["updated_at"]),
        origin=cast(RunOrigin, row["origin"]),
        task=row["task"],
        purged_at=from_db_optional(row["purged_at"]),
        engine=_engine(row),
        needs_migration=row["needs_migration"],
        held_by=row["held_by"],
        hold_reason=row["hold_reason"],
    )


def run_beside(row: Row) -> RunRecord | None:
    """The run read beside an approval in one row (`APPROVAL_AND_RUN_COLUMNS`), None when
    the approval has no run."""
    row = by_name(row)
    if row[f"{RUN_PREFIX}run_id"] is None:
        return None
    return row_to_run({name: row[f"{RUN_PREFIX}{name}"] for name in _RUN_NAMES})


def _engine(row: Row) -> EngineStamp | None:
    if row["engine"] is None:
        return None
    return EngineStamp(
        name=row["engine"],
        version=row["engine_version"],
        schema_version=row["engine_schema_version"],
    )


def row_to_approval(
    row: Row, *, snapshot: str | None = None, snapshot_seal: SealCheck = "missing"
) -> ApprovalRecord:
    """The approval of a row; `snapshot` and `snapshot_seal` as checked by the caller
    (store.seals.read_approval), else the stored snapshot, its seal unchecked.

    Every vote and every list builds these, so the record is made without the frozen
    dataclass's `__init__` (a call of `object.__setattr__` per field, 3.4 us of the 5 us
    this took): its fields are set at once, every one of them, to what `__init__` would
    set (tests/store/test_rows.py holds the two to the same record); it stays frozen."""
    row = by_name(row)
    record: ApprovalRecord = _NEW(ApprovalRecord)
    record.__dict__.update(
        approval_id=row["approval_id"],
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        arguments_digest=row["arguments_digest"],
        snapshot=row["snapshot"] if snapshot is None else snapshot,
        status=row["status"],
        requester=row["requester"],
        decider=row["decider"],
        reason=row["reason"],
        message=row["message"],
        created_at=from_db(row["created_at"]),
        decided_at=from_db_optional(row["decided_at"]),
        expires_at=from_db_optional(row["expires_at"]),
        revoked_at=from_db_optional(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        required_approvals=int(row["required_approvals"]),
        remind_at=from_db_optional(row["remind_at"]),
        reminded_at=from_db_optional(row["reminded_at"]),
        revoke_reason=row["revoke_reason"],
        amended_by=row["amended_by"],
        execution_key=row["execution_key"],
        policy_fingerprint=row["policy_fingerprint"],
        snapshot_seal=snapshot_seal,
    )
    return record


_NEW = object.__new__


def row_to_standing(row: Row) -> StandingDecision:
    return StandingDecision(
        approval_id=row["approval_id"],
        run_id=row["run_id"],
        tool_name=row["tool_name"],
        decision=cast(Verdict, row["decision"]),
        decider=row["decider"],
        reason=row["reason"],
        message=row["message"],
        created_at=from_db(row["created_at"]),
        revoked_at=from_db_optional(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        revoke_reason=row["revoke_reason"],
    )


def row_to_vote(row: Row) -> VoteRecord:
    return VoteRecord(
        approval_id=row["approval_id"],
        voter=row["voter"],
        decision=cast(Verdict, row["decision"]),
        digest=row["digest"],
        reason=row["reason"],
        at=from_db(row["at"]),
    )


def row_to_event(row: Row) -> AuditEvent:
    return AuditEvent(
        seq=int(row["seq"]),
        kind=row["kind"],
        actor=row["actor"],
        run_id=row["run_id"],
        approval_id=row["approval_id"],
        detail=json.loads(row["detail"]),
        at=from_db(row["at"]),
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


def row_to_ledger_entry(row: Row) -> LedgerEntry:
    return LedgerEntry(
        execution_key=row["execution_key"],
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        state=row["state"],
        attempt=int(row["attempt"]),
        lease_owner=row["lease_owner"],
        lease_expires_at=from_db_optional(row["lease_expires_at"]),
        lease_version=int(row["lease_version"]),
        updated_at=from_db(row["updated_at"]),
    )
