"""The people-facing lists of approvals, each served by an index (migration 0004), named
in the query for SQLite (`INDEXED BY`; Postgres's planner picks the same index):

- pending_page: keyset pagination over the partial index of pending approvals by
  (created_at, approval_id): a page costs the same with 10 or 10,000 pending;
- approvals_requested_by: (requester, created_at), newest first;
- recent_decisions: the partial index on decided_at, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.records import ApprovalRecord, PendingCursor, RunOrigin
from store.rows import APPROVAL_COLUMNS, to_db
from store.seals import DecisionSeals, read_approval
from store.sql.approval_checks import check_page
from store.tx import Database

# Approvals of runs of one origin: per candidate row, one primary-key lookup of its run.
OF_ORIGIN = "EXISTS (SELECT 1 FROM runs r WHERE r.run_id = approvals.run_id AND r.origin = ?)"


class ApprovalLists:
    """The lists of the ApprovalStore."""

    def __init__(self, database: Database, seals: DecisionSeals) -> None:
        self._seals = seals
        self._db = database

    async def pending_page(
        self,
        *,
        after: PendingCursor | None = None,
        limit: int = 20,
        not_requested_by: str | None = None,
        tool_names: Sequence[str] | None = None,
        except_tool_names: Sequence[str] = (),
        origin: RunOrigin | None = None,
    ) -> list[ApprovalRecord]:
        check_page(limit)
        clauses = ["status = 'pending'"]
        params: list[object] = []
        if after is not None:
            clauses.append("(created_at, approval_id) > (?, ?)")
            params += [to_db(after[0]), after[1]]
        if not_requested_by is not None:
            clauses.append("(requester IS NULL OR requester <> ?)")
            params.append(not_requested_by)
        if tool_names is not None:
            if not tool_names:
                return []
            clauses.append(f"tool_name IN ({', '.join('?' * len(tool_names))})")
            params += list(tool_names)
        if except_tool_names:
            clauses.append(f"tool_name NOT IN ({', '.join('?' * len(except_tool_names))})")
            params += list(except_tool_names)
        if origin is not None:
            clauses.append(OF_ORIGIN)
            params.append(origin)
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_pending_page "
            f"WHERE {' AND '.join(clauses)} ORDER BY created_at, approval_id LIMIT ?",
            (*params, limit),
        )
        return [read_approval(self._seals, row) for row in rows]

    async def approvals_requested_by(
        self, requester: str, *, limit: int = 20
    ) -> list[ApprovalRecord]:
        check_page(limit)
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_by_requester "
            "WHERE requester = ? ORDER BY created_at DESC, approval_id DESC LIMIT ?",
            (requester, limit),
        )
        return [read_approval(self._seals, row) for row in rows]

    async def recent_decisions(
        self, *, limit: int = 20, origin: RunOrigin | None = None
    ) -> list[ApprovalRecord]:
        check_page(limit)
        where = "decided_at IS NOT NULL" + (f" AND {OF_ORIGIN}" if origin is not None else "")
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_by_decision "
            f"WHERE {where} ORDER BY decided_at DESC LIMIT ?",
            (limit,) if origin is None else (origin, limit),
        )
        return [read_approval(self._seals, row) for row in rows]
