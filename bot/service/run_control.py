"""What may be done to a whole run through the service: cancel it, pause it and let it
go on, resume a stuck one, reconcile an uncertain call and resume.
"""

from __future__ import annotations

from bot.runtime import Resolution
from bot.service.operator import cancel_run, pause_run, resume_stuck, unpause_run
from bot.service.reconcile import reconcile_call
from bot.service.resume import start_resume
from bot.service.workflow import Workflow
from store.records import CancelOutcome, RunRecord


class RunControl:
    """The whole-run operations of ApprovalService (a part of it: its `_flow` is the
    service's)."""

    _flow: Workflow

    async def cancel_run(self, run_id: str, *, actor: str, reason: str) -> CancelOutcome:
        """Cancel a running, paused or stuck run: it ends `cancelled`, its open approvals
        close (their cards updated), its thread is told (`RunCancelled`), all audited. A
        compare-and-set on the run's version: see bot.service.operator."""
        return await cancel_run(self._flow, run_id, actor=actor, reason=reason)

    async def pause_run(self, run_id: str, *, actor: str, reason: str) -> RunRecord:
        """Pause a run: it starts no new step (a tool already running finishes), and is
        not resumed after its decisions, until `unpause_run`; its thread is told
        (`RunPaused`), audited. See bot.service.operator."""
        return await pause_run(self._flow, run_id, actor=actor, reason=reason)

    async def unpause_run(self, run_id: str, *, actor: str) -> RunRecord:
        """Let a paused run go on: its hold is released and, with nothing left to
        decide, its resume runs in a service task. See bot.service.operator."""
        return await unpause_run(self._flow, run_id, actor=actor)

    async def resume_stuck(self, run_id: str, *, actor: str) -> RunRecord:
        """Run again the resume of a run left `resuming` (or paused with nothing left to
        decide), in a service task; see bot.service.operator."""
        return await resume_stuck(self._flow, run_id, actor=actor)

    async def reconcile(
        self,
        run_id: str,
        *,
        actor: str,
        resolution: Resolution,
        call: str | None = None,
        reason: str | None = None,
    ) -> RunRecord:
        """Resolve an uncertain call (by tool call id or execution key; optional when the
        run has one) with a `resolution`: a `VerifiedResult`, `RetryCall` or `AbortCall`
        (bot.runtime), then resume the run in a task. Audited as `reconciled`. Only the
        policy's admins and people eligible to approve the call's tool may, the call's
        requester not unless self approval is allowed (NotAuthorizedError, audited
        `refused`)."""
        run = await reconcile_call(
            self._flow, run_id, actor=actor, call=call, resolution=resolution, reason=reason
        )
        start_resume(self._flow, run)
        return run
