"""The McpCallStore: an MCP client's call (by its key) -> the run that answers it.

A key is claimed before its run is created (the claim decides which worker starts the
run), so the row names a run that may not exist yet; `forget_mcp_calls` drops old rows
whose run finished long ago or never came to be.
"""

from __future__ import annotations

from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.records import FINISHED_RUN_STATUSES, McpCallClaim
from store.rows import Row, from_db, to_db
from store.tx import Body, Database, many, one, placeholders

_FINISHED = tuple(sorted(FINISHED_RUN_STATUSES))


class McpCalls:
    """The McpCallStore."""

    def __init__(self, database: Database, clock: Clock) -> None:
        self._db = database
        self._clock = clock

    async def claim_mcp_call(
        self, call_key: str, *, run_id: str, replacing: str | None = None
    ) -> McpCallClaim:
        if not call_key or not run_id:
            raise InputError("an MCP call claim needs a call key and a run id")
        at = to_db(self._clock())

        def body() -> Body[McpCallClaim]:
            claimed = yield one(
                "INSERT INTO mcp_calls (call_key, run_id, claimed_at) VALUES (?, ?, ?) "
                "ON CONFLICT (call_key) DO UPDATE SET run_id = excluded.run_id, "
                "claimed_at = excluded.claimed_at WHERE mcp_calls.run_id = ? "
                "RETURNING call_key, run_id, claimed_at",
                (call_key, run_id, at, replacing),
            )
            if claimed is not None:
                return _claim(claimed, won=True)
            held = yield one(
                "SELECT call_key, run_id, claimed_at FROM mcp_calls WHERE call_key = ?",
                (call_key,),
            )
            assert held is not None  # the insert met it; rows go only by their own key
            return _claim(held, won=False)

        return await self._db.transact(body)

    async def release_mcp_call(self, call_key: str, *, run_id: str) -> bool:
        def body() -> Body[bool]:
            gone = yield many(
                "DELETE FROM mcp_calls WHERE call_key = ? AND run_id = ? RETURNING call_key",
                (call_key, run_id),
            )
            return bool(gone)

        return await self._db.transact(body)

    async def forget_mcp_calls(self, *, before: datetime) -> int:
        at = to_db(before)

        def body() -> Body[int]:
            gone = yield many(
                "DELETE FROM mcp_calls WHERE claimed_at < ? AND NOT EXISTS (SELECT 1 FROM "
                "runs WHERE runs.run_id = mcp_calls.run_id AND (runs.updated_at >= ? OR "
                f"runs.status NOT IN ({placeholders(len(_FINISHED))}))) RETURNING call_key",
                (at, at, *_FINISHED),
            )
            return len(gone)

        return await self._db.transact(body)


def _claim(row: Row, *, won: bool) -> McpCallClaim:
    return McpCallClaim(call_key=row[0], run_id=row[1], claimed_at=from_db(row[2]), won=won)
