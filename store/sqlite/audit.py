"""The hash-chained audit log: append inside a write transaction, verify, read.

Each event's hash is SHA-256 over the previous event's hash followed by the event's
canonical JSON (kind, actor, run id, approval id, detail, time). The `audit_head` row,
advanced by an insert trigger, remembers the newest event, so deleting events at the end
is caught as well. Verification walks the log in order and names the first bad event:

- `edited`: its content no longer matches its own hash;
- `deleted`: a sequence number is missing (or the log ends before the head);
- `reordered`: it links to an event that exists elsewhere in the log;
- `rewritten`: it links to a hash no event has (the event before it was replaced with a
  recomputed hash, or events were deleted and the rest renumbered).

Someone who can write the database file can still rebuild the whole chain and head; keep
the head hash that `audit verify` prints somewhere else to detect that.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.errors import InputError
from store.api import AuditEvent, AuditVerification

__all__ = ["AuditEvent", "append", "head", "read_events", "verify"]
from store.sqlite.connection import Database, fetch_one, where_all
from store.sqlite.timefmt import from_db, to_db

GENESIS_HASH = "0" * 64
VERIFY_PAGE = 2000
EVENT_COLUMNS = "seq, kind, actor, run_id, approval_id, detail, at, prev_hash, hash"


def canonical_detail(detail: Mapping[str, Any] | None) -> str:
    try:
        return json.dumps(
            dict(detail or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except (TypeError, ValueError) as error:
        raise InputError(f"audit detail is not JSON-serializable: {error}") from None


def event_hash(
    prev_hash: str,
    *,
    kind: str,
    actor: str | None,
    run_id: str | None,
    approval_id: str | None,
    detail_json: str,
    at: str,
) -> str:
    body = {
        "kind": kind,
        "actor": actor,
        "run_id": run_id,
        "approval_id": approval_id,
        "detail": json.loads(detail_json),
        "at": at,
    }
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev_hash + canonical).encode()).hexdigest()


def append(
    connection: sqlite3.Connection,
    kind: str,
    *,
    at: datetime,
    actor: str | None = None,
    run_id: str | None = None,
    approval_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Append one event; call inside a write transaction (the head row is read there)."""
    if not kind:
        raise InputError("audit event kind is empty")
    head = fetch_one(connection, "SELECT seq, hash FROM audit_head WHERE id = 1")
    if head is None:
        raise InputError("audit head row is missing; the database was altered")
    seq, prev_hash = int(head[0]) + 1, str(head[1])
    at_text = to_db(at)
    detail_json = canonical_detail(detail)
    digest = event_hash(
        prev_hash,
        kind=kind,
        actor=actor,
        run_id=run_id,
        approval_id=approval_id,
        detail_json=detail_json,
        at=at_text,
    )
    connection.execute(
        f"INSERT INTO audit_events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (seq, kind, actor, run_id, approval_id, detail_json, at_text, prev_hash, digest),
    )
    return AuditEvent(
        seq=seq,
        kind=kind,
        actor=actor,
        run_id=run_id,
        approval_id=approval_id,
        detail=json.loads(detail_json),
        at=from_db(at_text),
        prev_hash=prev_hash,
        hash=digest,
    )


def row_to_event(row: sqlite3.Row) -> AuditEvent:
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


def event_to_json_line(event: AuditEvent) -> str:
    """One export line: every field, times in ISO 8601 UTC."""
    record = {
        "seq": event.seq,
        "kind": event.kind,
        "actor": event.actor,
        "run_id": event.run_id,
        "approval_id": event.approval_id,
        "detail": dict(event.detail),
        "at": event.at.isoformat(),
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }
    return json.dumps(record, sort_keys=True, ensure_ascii=False)


async def read_events(
    database: Database,
    *,
    since: datetime | None = None,
    run_id: str | None = None,
    approval_id: str | None = None,
) -> list[AuditEvent]:
    where, params = where_all(
        {
            "at >= ?": None if since is None else to_db(since),
            "run_id = ?": run_id,
            "approval_id = ?": approval_id,
        }
    )
    rows = await database.read(
        f"SELECT {EVENT_COLUMNS} FROM audit_events {where} ORDER BY seq", params
    )
    return [row_to_event(row) for row in rows]


async def verify(database: Database) -> AuditVerification:
    """Walk the chain up to the head read first (later appends are not judged) and
    report the first bad event and how it is bad."""
    head_seq, head_hash = await head(database)
    previous_hash, expected_seq, checked = GENESIS_HASH, 1, 0
    while expected_seq <= head_seq:
        rows = await database.read(
            f"SELECT {EVENT_COLUMNS} FROM audit_events WHERE seq >= ? AND seq <= ? "
            "ORDER BY seq LIMIT ?",
            (expected_seq, head_seq, VERIFY_PAGE),
        )
        for row in rows:
            problem = await _check_event(database, row, previous_hash, expected_seq)
            if problem is not None:
                return _bad(checked, *problem)
            previous_hash, expected_seq, checked = row["hash"], expected_seq + 1, checked + 1
        if len(rows) < VERIFY_PAGE:
            break
    if expected_seq <= head_seq:
        return _bad(checked, expected_seq, "deleted")  # the log ends before its head
    if previous_hash != head_hash:
        return _bad(checked, head_seq, "rewritten")
    return AuditVerification(ok=True, checked=checked)


def _bad(checked: int, seq: int, problem: str) -> AuditVerification:
    return AuditVerification(ok=False, checked=checked, first_bad_seq=seq, problem=problem)


async def _check_event(
    database: Database, row: sqlite3.Row, previous_hash: str, expected_seq: int
) -> tuple[int, str] | None:
    if int(row["seq"]) != expected_seq:
        return expected_seq, "deleted"
    recomputed = event_hash(
        row["prev_hash"],
        kind=row["kind"],
        actor=row["actor"],
        run_id=row["run_id"],
        approval_id=row["approval_id"],
        detail_json=row["detail"],
        at=row["at"],
    )
    if recomputed != row["hash"]:
        return expected_seq, "edited"
    if row["prev_hash"] != previous_hash:
        elsewhere = await database.read_one(
            "SELECT seq FROM audit_events WHERE hash = ? LIMIT 1", (row["prev_hash"],)
        )
        return expected_seq, "reordered" if elsewhere is not None else "rewritten"
    return None


async def head(database: Database) -> tuple[int, str]:
    """The newest event's sequence number and hash (0 and the genesis hash when empty)."""
    row = await database.read_one("SELECT seq, hash FROM audit_head WHERE id = 1")
    return (0, GENESIS_HASH) if row is None else (int(row[0]), str(row[1]))
