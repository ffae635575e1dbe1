"""What people see through the service: an approval as a viewer may see it, the pending
and requested lists, recent decisions, an approval's audit trail, an uncertain call as
the reconcile form shows it. Reads change nothing (but a reading in full, recorded).
"""

from __future__ import annotations

from bot.service.api import ApprovalView, Page, UncertainCall
from bot.service.authority import require_visible
from bot.service.reading import record_read
from bot.service.reconcile import describe_uncertain
from bot.service.views import build_view, pending_for, recent_decisions, views_of
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, AuditEvent


class ReadSide:
    """The read models of ApprovalService (a part of it: its `_flow` is the service's)."""

    _flow: Workflow

    async def approval_view(self, approval_id: str, *, viewer: str) -> ApprovalView:
        """The approval, its votes and quorum, and what `viewer` may do (InputError if
        unknown; NotAuthorizedError when the viewer is not a member of its channel)."""
        approval, _ = await self._flow.require_approval(approval_id)
        return await build_view(self._flow, approval, viewer)

    async def read_in_full(self, approval_id: str, *, viewer: str, digest: str) -> ApprovalView:
        """`viewer` was shown the whole arguments of `digest` (bot.service.reading);
        ResolutionError when `digest` is no longer current."""
        approval, _ = await self._flow.require_approval(approval_id)
        await require_visible(self._flow, approval, viewer)
        await record_read(self._flow, approval, viewer, digest)
        return await build_view(self._flow, approval, viewer)

    async def pending_for(
        self, viewer: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[ApprovalView]:
        """Pending approvals `viewer` may decide (not their own runs' unless self approval
        is allowed; not ones they already approved; only from channels they are a member
        of), oldest first, by keyset pages. `cursor` is a previous page's `next_cursor`
        (InputError for anything else)."""
        return await pending_for(self._flow, viewer, limit=limit, cursor=cursor)

    async def requested_by(self, viewer: str, *, limit: int = 20) -> list[ApprovalView]:
        """Approvals of runs `viewer` started, newest first."""
        rows = await self._flow.store.approvals_requested_by(viewer, limit=limit)
        return await views_of(self._flow, rows, viewer)

    async def recent_decisions(
        self, *, limit: int = 20, viewer: str | None = None
    ) -> list[ApprovalRecord]:
        """The latest approvals and rejections of this surface's runs, newest first (with a
        `viewer`: only those they may see)."""
        return await recent_decisions(self._flow, limit=limit, viewer=viewer)

    async def approval_trail(self, approval_id: str, *, viewer: str) -> list[AuditEvent]:
        """The audit events of one approval, in order (requested, voted, refused,
        arguments_changed, decided, revoked, expired, executed, ...). Whoever may see the
        call may read it (NotAuthorizedError otherwise); reads are not audited."""
        approval, _ = await self._flow.require_approval(approval_id)
        await require_visible(self._flow, approval, viewer)
        events = await self._flow.store.audit_events(run_id=approval.run_id)
        return [event for event in events if event.approval_id == approval.approval_id]

    async def uncertain_call(self, run_id: str, *, call: str | None = None) -> UncertainCall:
        """The run's uncertain call (by tool call id or execution key; optional when the
        run has one), as the reconcile form shows it. InputError for an unknown run,
        UnknownCallError when no such call is uncertain."""
        return await describe_uncertain(self._flow, run_id, call)
