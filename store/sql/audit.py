"""The audit log: append inside a write transaction, read, verify.

The chain itself (hashing, linking, the verification walk) is in store.audit. Here: the
`audit_events` table (append-only: triggers refuse UPDATE and DELETE) and the
`audit_head` row that an insert trigger advances to the newest event. An append reads
the head `FOR UPDATE`: on Postgres concurrent appenders, from any number of processes,
wait for each other there, so the log stays one chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.clock import Clock
from bot.errors import InputError
from store.audit import GENESIS_HASH, canonical_detail, new_event, verify_chain
from store.records import AuditEvent, AuditVerification
from store.rows import EVENT_COLUMNS, Row, row_to_event, to_db, where_all
from store.tx import Body, Engine, one

APPEND = (
    "WITH head AS (SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE) "
    f"INSERT INTO audit_events ({EVENT_COLUMNS}) "
    "SELECT head.seq + 1, ?, ?, ?, ?, ?, ?, head.hash, "
    "encode(sha256(convert_to(head.hash || ?, 'UTF8')), 'hex') FROM head "
    "RETURNING seq, prev_hash, hash"
)
"""One statement: read the head (locked until commit on Postgres), link and hash the
event in the database (store.audit.chain_hash; SQLite has the three functions from
store.sqlite.connection), insert it (the trigger advances the head). On Postgres the
head is held from this statement to the commit only, not for a round trip more."""


def append(
    kind: str,
    *,
    at: datetime,
    actor: str | None = None,
    run_id: str | None = None,
    approval_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> Body[AuditEvent]:
    """Append one event, inside a write transaction."""
    event = new_event(
        kind, at=at, actor=actor, run_id=run_id, approval_id=approval_id, detail=detail
    )
    row = yield one(
        APPEND,
        (event.kind, event.actor, event.run_id, event.approval_id, event.detail_json,
         event.at, event.canonical),
    )  # fmt: skip
    if row is None:
        raise InputError("audit head row is missing; the database was altered")
    return event.placed(int(row[0]), str(row[1]), str(row[2]))


class Audit:
    """The AuditStore (and the chain reads that store.audit verifies)."""

    def __init__(self, database: Engine, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def append_audit(
        self,
        kind: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """Append one event in its own write transaction."""
        at = self._clock()
        canonical_detail(detail)  # refuse a bad detail before taking the write lock

        def body() -> Body[AuditEvent]:
            return append(
                kind,
                at=at,
                actor=actor,
                run_id=run_id,
                approval_id=approval_id,
                detail=detail,
            )

        return await self._db.transact(body)

    async def audit_events(
        self,
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
        rows = await self._db.read(
            f"SELECT {EVENT_COLUMNS} FROM audit_events {where} ORDER BY seq", params
        )
        return [row_to_event(row) for row in rows]

    async def verify_audit(self) -> AuditVerification:
        return await verify_chain(self)

    async def audit_head(self) -> tuple[int, str]:
        row = await self._db.read_one("SELECT seq, hash FROM audit_head WHERE id = 1")
        return (0, GENESIS_HASH) if row is None else (int(row[0]), str(row[1]))

    async def chain_page(self, first: int, last: int, limit: int) -> Sequence[Row]:
        return await self._db.read(
            f"SELECT {EVENT_COLUMNS} FROM audit_events WHERE seq >= ? AND seq <= ? "
            "ORDER BY seq LIMIT ?",
            (first, last, limit),
        )

    async def has_event_hash(self, event_hash: str) -> bool:
        row = await self._db.read_one(
            "SELECT seq FROM audit_events WHERE hash = ? LIMIT 1", (event_hash,)
        )
        return row is not None
