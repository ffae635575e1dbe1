"""Copying a whole store to another database, engine to engine (`approvals-bot db copy`).

Every row of every table goes across as it is stored: runs and their sealed state blobs
(ciphertext, nonce and key id unchanged: the associated data names the run, its version
and schema, never the engine, so the same key ring opens them there), approvals, votes,
full reads, standing decisions, ledger rows with their sealed results, and the audit log
with its head, in sequence order, so the chain's hashes verify on the copy. The target
must be empty and at the same schema version as the source; the copy is one transaction
on the target, so a failure leaves it empty. The source is read, never written.

What is not copied: run leases, request memory and the MCP gateway's call keys. A copy
is taken with the bot stopped (`db copy` refuses while a server holds the SQLite file),
so no lease is live; a run left working is taken over by recovery at the first start on
the target, Slack's redeliveries from before the move are long past, and an MCP client
retrying a call from before the move gets a new card (its old one still decides the old
run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from store.tx import Body, Engine, one, run

# In an order the foreign keys accept, each with the order its rows are read in.
TABLES: tuple[tuple[str, str], ...] = (
    ("runs", "run_id"),
    ("run_blobs", "run_id"),
    ("approvals", "approval_id"),
    ("approval_votes", "approval_id, voter, digest"),
    ("approval_full_reads", "approval_id, reader, digest"),
    ("standing_decisions", "approval_id"),
    ("ledger", "execution_key"),
    ("audit_events", "seq"),  # the insert trigger moves the head along to the last one
)
HELD = ("runs", "approvals", "ledger", "audit_events")  # any row here: the target is in use


@dataclass(frozen=True, kw_only=True)
class CopyReport:
    rows: dict[str, int]  # rows copied, by table


Progress = Callable[[str, int], None]
"""Told (table, rows) as each table's rows are in the target's transaction."""


async def copy_store(
    source: Engine,
    target: Engine,
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
