"""The people-facing approval lists, each served by an index (migration 0004).

- pending_page: keyset pagination over the partial index of pending approvals by
  (created_at, approval_id): a page costs the same with 10 or 10,000 pending;
- approvals_requested_by: (requester, created_at), newest first;
- recent_decisions: the partial index on decided_at, newest first.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.errors import InputError
from store.api import ApprovalRecord, PendingCursor
from store.sqlite.base import StoreBase
from store.sqlite.rows import APPROVAL_COLUMNS, row_to_approval
from store.sqlite.timefmt import to_db

MAX_PAGE = 500


class ApprovalReadsPart(StoreBase):
    async def pending_page(
        self,
        *,
        after: PendingCursor | None = None,
        limit: int = 20,
        not_requested_by: str | None = None,
        tool_names: Sequence[str] | None = None,
        except_tool_names: Sequence[str] = (),
    ) -> list[ApprovalRecord]:
        _check_limit(limit)
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
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_pending_page "
            f"WHERE {' AND '.join(clauses)} ORDER BY created_at, approval_id LIMIT ?",
            (*params, limit),
        )
        return [row_to_approval(row) for row in rows]

    async def approvals_requested_by(
        self, requester: str, *, limit: int = 20
    ) -> list[ApprovalRecord]:
        _check_limit(limit)
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_by_requester "
            "WHERE requester = ? ORDER BY created_at DESC, approval_id DESC LIMIT ?",
            (requester, limit),
        )
        return [row_to_approval(row) for row in rows]

    async def recent_decisions(self, *, limit: int = 20) -> list[ApprovalRecord]:
        _check_limit(limit)
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals INDEXED BY approvals_by_decision "
            "WHERE decided_at IS NOT NULL ORDER BY decided_at DESC LIMIT ?",
            (limit,),
        )
        return [row_to_approval(row) for row in rows]


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InputError(f"a page holds 1 to {MAX_PAGE} approvals, not {limit}")
