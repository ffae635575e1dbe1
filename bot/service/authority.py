"""Who may do what to an approval, by the policy: decide, revoke, reconcile.

Every refusal is audited (`refused`, with `why`) before the error is raised, so the trail
shows attempts as well as decisions. The same checks run again right before an approved
call executes (`execution_check`): each counted voter must still be eligible (a person
removed from the approver group since stops the execution).
"""

from __future__ import annotations

from typing import Any

from bot.errors import NotAuthorizedError
from bot.policy import Eligibility, Eligible, NotEligible, ToolRule, is_eligible
from bot.service.parts import ServiceParts
from store.api import ApprovalRecord, VoteRecord


async def refuse(
    parts: ServiceParts,
    approval: ApprovalRecord,
    *,
    actor: str,
    why: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """Audit a refused attempt (`refused`, detail.why)."""
    await parts.store.append_audit(
        "refused",
        actor=actor,
        run_id=approval.run_id,
        approval_id=approval.approval_id,
        detail={"why": why, "tool": approval.tool_name, **(detail or {})},
    )


async def eligibility(parts: ServiceParts, approval: ApprovalRecord, user: str) -> Eligibility:
    return await is_eligible(
        parts.rule_for(approval.tool_name),
        user,
        requester=approval.requester,
        groups=parts.groups,
    )


async def require_decider(parts: ServiceParts, approval: ApprovalRecord, user: str) -> ToolRule:
    """The tool's rule when `user` may decide; else audit and NotAuthorizedError."""
    verdict = await eligibility(parts, approval, user)
    if isinstance(verdict, NotEligible):
        await refuse(parts, approval, actor=user, why=verdict.code)
        raise NotAuthorizedError(verdict.reason)
    return parts.rule_for(approval.tool_name)


async def may_revoke(parts: ServiceParts, approval: ApprovalRecord, user: str) -> bool:
    """The run's requester, anyone eligible to decide, and the policy's admins."""
    if parts.policy.is_admin(user) or user == approval.requester:
        return True
    return isinstance(await eligibility(parts, approval, user), Eligible)


async def may_reconcile(
    parts: ServiceParts, *, tool_name: str, requester: str | None, user: str
) -> bool:
    """Admins, and people eligible to approve the uncertain call's tool."""
    if parts.policy.is_admin(user):
        return True
    verdict = await is_eligible(
        parts.rule_for(tool_name), user, requester=requester, groups=parts.groups
    )
    return isinstance(verdict, Eligible)


def counted_voters(approval: ApprovalRecord, votes: list[VoteRecord]) -> list[str]:
    """Who approved the approval's current digest. An approval decided before votes
    existed (no vote rows at all) counts its decider, if it was approved."""
    if not votes:
        legacy = approval.status == "approved" and approval.decider is not None
        return [approval.decider] if legacy and approval.decider else []
    return [
        vote.voter
        for vote in votes
        if vote.digest == approval.arguments_digest and vote.decision == "approved"
    ]


async def execution_check(parts: ServiceParts, approval: ApprovalRecord) -> str | None:
    """Why an approved call may not run now (a voter no longer eligible), or None."""
    votes = (await parts.store.votes([approval.approval_id]))[approval.approval_id]
    for voter in counted_voters(approval, votes):
        verdict = await eligibility(parts, approval, voter)
        if isinstance(verdict, NotEligible):
            return f"approver {voter} is no longer eligible ({verdict.code})"
    return None
