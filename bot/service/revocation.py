"""Revoking a call: a pending one, or an approved one whose call has not started, never
runs; a decision that stands for the rest of the run, and an approval window it
opened, end.

Refused (audited `refused`) unless the person is the run's requester, eligible to decide
the call or an admin (bot.service.authority). Like a vote it comes in two steps:
`record_revocation` commits, and the answer's `finish()` updates the card and resumes
the run when nothing else is open.
"""

from __future__ import annotations

from functools import partial

from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError
from bot.service.answers import Recorded
from bot.service.authority import already_decided, eligibility, refuse, revoke_refusal
from bot.service.events import ApprovalDecided
from bot.service.resume import resume_if_all_decided
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, RunRecord


async def record_revocation(
    flow: Workflow, approval_id: str, *, actor: str, reason: str
) -> Recorded[ApprovalRecord]:
    """Revoke (see `ApprovalService.revoke`): committed here (refusals raised here);
    `finish()` updates the card and resumes the run when nothing else is open."""
    if not actor.strip():
        raise InputError("a revocation needs the actor's id")
    if not reason.strip():
        raise InputError("say why you revoke it")
    approval, run = await flow.require_approval(approval_id)
    verdict = await eligibility(flow, approval, actor)
    refusal = revoke_refusal(flow.policy, verdict, approval, actor)
    if refusal == "not_authorized":
        await refuse(flow, approval, actor=actor, why=refusal, detail={"action": "revoke"})
        raise NotAuthorizedError(
            "only the run's requester, an approver of this tool or an admin may revoke it"
        )
    # A decision that stands for the rest of the run ends first: that works even after
    # the approval's own call ran (then the approval itself stays as it is).
    standing = await flow.store.revoke_standing_decision(
        approval_id, actor=actor, reason=reason.strip(), via=flow.via
    )
    # So does an approval window it opened.
    window = await flow.store.revoke_window(
        approval_id, actor=actor, reason=reason.strip(), via=flow.via
    )
    ended = standing or window
    if refusal == "closed":
        if ended is not None:
            return Recorded(approval=approval, finish=partial(_standing_ended, flow, run, approval))
        await refuse(flow, approval, actor=actor, why=refusal, detail={"action": "revoke"})
        raise already_decided(approval)
    outcome = await flow.store.revoke(approval_id, actor=actor, reason=reason.strip(), via=flow.via)
    if not outcome.won and ended is not None:
        record = outcome.record
        return Recorded(approval=record, finish=partial(_standing_ended, flow, run, record))
    if not outcome.won:  # it closed meanwhile, or its approved call already started
        await refuse(flow, outcome.record, actor=actor, why="closed", detail={"action": "revoke"})
        if outcome.record.status == "approved":
            raise AlreadyDecidedError(
                "this call has already started or run; it can no longer be revoked",
                status="executed",
                decider=outcome.record.decider,
                decided_at=outcome.record.decided_at,
            )
        raise already_decided(outcome.record)
    return Recorded(approval=outcome.record, finish=partial(_revoked, flow, run, outcome.record))


async def _revoked(flow: Workflow, run: RunRecord, record: ApprovalRecord) -> ApprovalRecord:
    flow.telemetry.approval_closed(record)
    standing = await flow.standing(run.run_id)
    await flow.notify(ApprovalDecided(run=run, approval=record, standing=standing))
    await resume_if_all_decided(flow, record.run_id)
    return record


async def _standing_ended(flow: Workflow, run: RunRecord, record: ApprovalRecord) -> ApprovalRecord:
    """Its card stops saying the decision stands (it is updated in place)."""
    standing = await flow.standing(run.run_id)
    await flow.notify(ApprovalDecided(run=run, approval=record, standing=standing))
    return record
