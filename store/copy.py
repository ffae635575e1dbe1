"""Copying a whole store to another database, backend to backend (`approvals-bot db copy`).

Every row of every table goes across as it is stored: runs and their sealed state blobs
(ciphertext, nonce and key id unchanged: the associated data names the run, its version
and schema, never the backend, so the same key ring opens them there), approvals, votes,
full reads, standing decisions, approval windows, absences and their stand-ins, escalation steps,
direct-message copies of cards, ledger rows with their sealed results, and the audit log
with its head, in sequence order, so the chain's hashes verify on the copy. The target
must be empty and at the same schema version as the source; the copy is one transaction
on the target, so a failure leaves it empty. The source is read, never written (but for
linking what its audit queue holds, as every read of its log does first).

What is not copied, and why, is `NOT_COPIED`: run leases and request memory (a copy is
taken with the bot stopped, `db copy` refusing while a server holds the SQLite file, so
no lease is live; a run left working is taken over by recovery at the first start on the
target, and Slack's redeliveries from before the move are long past), the MCP gateway's
call keys (an MCP client retrying a call from before the move gets a new card; its old
one still decides the old run), the audit head
(the target's moves along as its events go in), the audit queue (linked on the source
first, as every read of its log does: a process that died between its commit and its
link leaves events there) and the migrations ledger (each database has its own, at the
same version). A test holds `TABLES` and `NOT_COPIED` to the tables the migrations make.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from store.sql.audit import link_all
from store.sql.chain import ANY_QUEUED
from store.tx import Body, Database, one, run

# In an order the foreign keys accept, each with the order its rows are read in.
TABLES: tuple[tuple[str, str], ...] = (
    ("runs", "run_id"),
    ("run_blobs", "run_id"),
    ("approvals", "approval_id"),
    ("approval_votes", "approval_id, voter, digest"),
    ("approval_full_reads", "approval_id, reader, digest"),
    ("standing_decisions", "approval_id"),
    ("approval_windows", "window_id"),
    ("stand_ins", "away_user, created_at"),
    ("approval_escalations", "approval_id, step"),
    ("approval_copies", "approval_id, recipient"),
    ("ledger", "execution_key"),
    ("audit_events", "seq"),  # the insert trigger moves the head along to the last one
)
HELD = ("runs", "approvals", "ledger", "audit_events")  # any row here: the target is in use
NOT_COPIED: dict[str, str] = {
    "run_leases": "no lease is live with the bot stopped; recovery takes working runs over",
    "request_memory": "Slack's redeliveries from before the move are long past",
    "mcp_calls": "an MCP client retrying a call from before the move gets a new card",
    "audit_head": "the target's head moves along as the copied events go in",
    "audit_queue": "linked into audit_events on the source before the copy reads it",
    "schema_migrations": "each database has its own ledger, at the same version",
}


@dataclass(frozen=True, kw_only=True)
class CopyReport:
    rows: dict[str, int]  # rows copied, by table


Progress = Callable[[str, int], None]
"""Told (table, rows) as each table's rows are in the target's transaction."""


async def copy_store(
    source: Database,
    target: Database,
    *,
    source_version: int,
    target_version: int,
    target_name: str,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy every row of `source` into the empty `target` (InputError, and nothing
    written, when it is not empty or its schema version differs). `progress` hears of
    each table as its rows are written, before the one commit (a transaction the target
    runs again, after a deadlock, tells it again from the first table)."""
    if source_version != target_version:
        raise InputError(
            f"{target_name} is at schema version {target_version}, the source at "
            f"{source_version}; upgrade approvals-bot on both sides first"
        )
    if await source.read_one(ANY_QUEUED) is not None:
        await link_all(source)  # what a dead process queued and did not link (NOT_COPIED)
    tables: dict[str, list[Any]] = {}
    for table, order in TABLES:
        tables[table] = list(await source.read(f"SELECT * FROM {table} ORDER BY {order}"))

    def body() -> Body[CopyReport]:
        for table in HELD:
            found = yield one(f"SELECT 1 FROM {table} LIMIT 1 FOR UPDATE")
            if found is not None:
                raise InputError(
                    f"{target_name} is not empty (its {table} table has rows); "
                    "copy into a new, empty database"
                )
        for table, rows in tables.items():
            for row in rows:
                yield run(_insert(table, row), tuple(row))
            if progress is not None:
                progress(table, len(rows))
        return CopyReport(rows={table: len(rows) for table, rows in tables.items()})

    return await target.transact(body)


def _insert(table: str, row: Any) -> str:
    columns = list(row.keys())
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
