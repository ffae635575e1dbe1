"""The audit log: queue events inside a write transaction, link them into the chain,
read, verify.

The chain itself (hashing, linking, the verification walk) is in store.audit. Here: the
`audit_queue` table, where a transaction puts the events it causes (committed with the
change, or not at all); the `audit_events` table (append-only: triggers refuse UPDATE
and DELETE) that `link_pending` moves them into, in queue order, each hashed onto the one
before; and the `audit_head` row that the insert trigger advances to the newest event.
`link_pending` reads the head `FOR UPDATE`, so linkers in any number of processes take
turns; writers never touch the head, so they commit side by side (before, every audited
write held the head from its append to its commit, and on Postgres decisions from every
process went through that lock one commit at a time).

When the queue is linked is the backend's choice (store.sql.chain): SQLite's one writer
links at the end of every write transaction, so its queue is empty between
transactions; on Postgres a sequencer task of each process links behind the writers.
Every read of the log links what is queued first, so a reader sees every committed
event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.clock import Clock
from bot.errors import InputError
from store.audit import GENESIS_HASH, NewEvent, link, new_event, verify_chain
from store.records import AuditEvent, AuditVerification
from store.rows import EVENT_COLUMNS, Row, row_to_event, to_db, where_all
from store.tx import (
    Body,
    Database,
    FollowUp,
    FromChanged,
    Statement,
    many,
    one,
    run,
    value_rows,
)

Settle = Callable[[], Awaitable[object]]
QUEUED = ("kind", "actor", "run_id", "approval_id", "detail", "at")
QUEUE = f"INSERT INTO audit_queue ({', '.join(QUEUED)}) VALUES (?, ?, ?, ?, ?, ?)"
LINK_BATCH = 500  # events linked per statement: 4,500 parameters, far below both limits
TAKE_QUEUED = (
    "DELETE FROM audit_queue WHERE id >= (SELECT MIN(id) FROM audit_queue) "
    "AND id <= (SELECT MAX(id) FROM (SELECT id FROM audit_queue ORDER BY id LIMIT ?) AS oldest) "
    f"RETURNING id, {', '.join(QUEUED)}"
)
"""Take the oldest queued events (exactly those: the statement sees one snapshot, in which
the ids up to the largest of the oldest `?` are those; a later-committed event with a
smaller id is not deleted unseen, it waits for the next link). A range on the primary
key, bounded on both sides so the planner reads it by the index: `id IN (...)` was
planned on Postgres as a hash join over a scan of the whole queue table, every page its
deleted rows left behind until a vacuum, on every link pass."""


def append(
    kind: str,
    *,
    at: datetime,
    actor: str | None = None,
    run_id: str | None = None,
    approval_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> Body[None]:
    """Queue one event, inside a write transaction (it commits with it)."""
    event = new_event(
        kind, at=at, actor=actor, run_id=run_id, approval_id=approval_id, detail=detail
    )
    yield queue(event)


def queue(event: NewEvent) -> Statement:
    """The statement that queues `event`."""
    return run(
        QUEUE,
        (event.kind, event.actor, event.run_id, event.approval_id, event.detail_json, event.at),
    )


def follow_up(
    kind: str,
    *,
    at: str,
    actor: str | None,
    detail: Mapping[str, Any],
) -> FollowUp:
    """Queue one event for each row a change returns (store.tx.changing), with the
    changed row's run and approval ids; `at` as stored (the change's own time text)."""
    event = new_event(kind, at=at, actor=actor, detail=detail)
    return FollowUp(
        table="audit_queue",
        columns=QUEUED,
        values=(event.kind, event.actor, FROM_RUN, FROM_APPROVAL, event.detail_json,
                event.at),
    )  # fmt: skip


FROM_RUN = FromChanged("run_id")
FROM_APPROVAL = FromChanged("approval_id")


LinkedRows = list[tuple[Any, ...]]  # (seq, kind, actor, run_id, approval_id, detail, at,
# prev_hash, hash) of each linked event, in order
InsertLinked = Callable[[LinkedRows], Statement]


def insert_values(rows: LinkedRows) -> Statement:
    """The linked events' INSERT in the shared SQL: a VALUES row each."""
    return run(
        f"INSERT INTO audit_events ({EVENT_COLUMNS}) VALUES {value_rows(len(rows), 9)}",
        [value for row in rows for value in row],
    )


def link_pending(limit: int = LINK_BATCH, *, insert: InsertLinked = insert_values) -> Body[int]:
    """Link up to `limit` queued events into the chain, oldest first; how many.
    `insert`: the statement that inserts them (a backend's own, or `insert_values`)."""
    head = yield one("SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE")
    if head is None:
        raise InputError("audit head row is missing; the database was altered")
    queued = yield many(TAKE_QUEUED, (limit,))
    if not queued:
        return 0
    rows = link(str(head[1]), int(head[0]), sorted(queued, key=lambda row: int(row["id"])))
    yield insert(rows)
    return len(rows)


def link_queued() -> Body[int]:
    """Link every queued event, inside one transaction; how many."""
    total = 0
    while True:
        linked = yield from link_pending()
        total += linked
        if linked < LINK_BATCH:
            return total


async def link_all(database: Database, insert: InsertLinked = insert_values) -> int:
    """Link every queued event, a batch per transaction; how many."""
    total = 0
    while (linked := await database.transact(lambda: link_pending(insert=insert))) > 0:
        total += linked
        if linked < LINK_BATCH:
            break
    return total


class Audit:
    """The AuditStore (and the chain reads that store.audit verifies)."""

    def __init__(self, database: Database, clock: Clock, *, settle: Settle) -> None:
        self._db = database
        self._clock = clock
        self._settle = settle  # links whatever is queued: a read sees every commit

    async def append_audit(
        self,
        kind: str,
        *,
        actor: str | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one event in its own write transaction (bad input is refused before
        anything is written)."""
        event = new_event(
            kind, at=self._clock(), actor=actor, run_id=run_id, approval_id=approval_id,
            detail=detail,
        )  # fmt: skip
        await self._db.transact_one(queue(event))

    async def audit_events(
        self,
        *,
        since: datetime | None = None,
        run_id: str | None = None,
        approval_id: str | None = None,
    ) -> list[AuditEvent]:
        await self._settle()
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
        await self._settle()
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
