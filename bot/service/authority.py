"""Who may do what to an approval, by the policy: decide, revoke, reconcile.

The rules are pure functions of the policy, the person's eligibility for the call's tool
(a verdict of `bot.policy.is_eligible`, taken with the call's requester so that the
self-approval rule holds), the approval and the person. The operations (bot.service.
voting, bot.service.reconcile) and the read model below (`ApprovalView`: what a viewer is
shown they may do) call the same functions, so the two cannot drift apart. An operation
audits every refusal (`refused`, with `why`) before it raises. The eligibility of every
counted voter is checked again right before an approved call executes
(`execution_check`): a person removed from the approver group since stops it.

The read model's pending list must stay fast with thousands of approvals waiting: the
policy is turned into a filter the store's index can serve (the tools the viewer may
approve, the viewer's own runs left out unless self approval is allowed somewhere), and
what only the policy can tell (a group membership, a vote already cast) is checked on
the page, fetching the next keyset page while the page is not full.
"""

from __future__ import annotations

from typing import Any, Literal

from bot.canonical import digests_equal
from bot.errors import InputError, NotAuthorizedError
from bot.policy import Eligibility, Eligible, NotEligible, Policy, ToolRule, is_eligible
from bot.service.api import ApprovalView, Page, decode_cursor, encode_cursor
from bot.service.workflow import Workflow
from store.api import ApprovalRecord, VoteRecord

MAX_LIMIT = 100
MAX_PAGES_PER_CALL = 20
REVOCABLE_STATUSES = frozenset({"pending", "approved"})  # approved: until the call runs

RevokeRefusal = Literal["not_authorized", "closed"]

# -- the rules (pure) ------------------------------------------------------------------


def may_revoke(policy: Policy, verdict: Eligibility, approval: ApprovalRecord, user: str) -> bool:
    """The run's requester, anyone eligible to decide the call, and the policy's admins."""
    return policy.is_admin(user) or user == approval.requester or isinstance(verdict, Eligible)


def revoke_refusal(
    policy: Policy, verdict: Eligibility, approval: ApprovalRecord, user: str
) -> RevokeRefusal | None:
    """Why `user` may not revoke the approval now (None: they may). Who may comes first,
    so that a closed approval tells nothing more to someone who may not revoke it."""
    if not may_revoke(policy, verdict, approval, user):
        return "not_authorized"
    if approval.status not in REVOCABLE_STATUSES:
        return "closed"
    return None


def may_reconcile(policy: Policy, verdict: Eligibility, user: str) -> bool:
    """The policy's admins, and people eligible to approve the uncertain call's tool (the
    verdict is taken with the call's requester: who asked for a call may not settle its
    outcome unless the rule allows self approval)."""
    return policy.is_admin(user) or isinstance(verdict, Eligible)


def counted_voters(approval: ApprovalRecord, votes: list[VoteRecord]) -> list[str]:
    """Who approved the approval's current digest. An approval decided before votes
    existed (no vote rows at all) counts its decider, if it was approved."""
    if not votes:
        legacy = approval.status == "approved" and approval.decider is not None
        return [approval.decider] if legacy and approval.decider else []
    return [
        vote.voter
        for vote in votes
        if vote.decision == "approved" and digests_equal(vote.digest, approval.arguments_digest)
    ]


# -- the rules applied to operations ----------------------------------------------------


async def refuse(
    flow: Workflow,
    approval: ApprovalRecord,
    *,
    actor: str,
    why: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """Audit a refused attempt (`refused`, detail.why)."""
    await flow.store.append_audit(
        "refused",
        actor=actor,
        run_id=approval.run_id,
        approval_id=approval.approval_id,
        detail={"why": why, "tool": approval.tool_name, "via": flow.via, **(detail or {})},
    )


async def eligibility(flow: Workflow, approval: ApprovalRecord, user: str) -> Eligibility:
    """May `user` decide the approval's call, by the policy (the approval's requester is
    the call's requester)."""
    return await is_eligible(
        flow.rule_for(approval.tool_name),
        user,
        requester=approval.requester,
        groups=flow.groups,
    )


async def require_decider(flow: Workflow, approval: ApprovalRecord, user: str) -> ToolRule:
    """The tool's rule when `user` may decide; else audit and NotAuthorizedError."""
    verdict = await eligibility(flow, approval, user)
    if isinstance(verdict, NotEligible):
        await refuse(flow, approval, actor=user, why=verdict.code)
        raise NotAuthorizedError(verdict.reason)
    return flow.rule_for(approval.tool_name)


async def execution_check(flow: Workflow, approval: ApprovalRecord) -> str | None:
    """Why an approved call may not run now (a voter no longer eligible), or None."""
    votes = (await flow.store.votes([approval.approval_id]))[approval.approval_id]
    for voter in counted_voters(approval, votes):
        verdict = await eligibility(flow, approval, voter)
        if isinstance(verdict, NotEligible):
            return f"approver {voter} is no longer eligible ({verdict.code})"
    return None


# -- the rules applied to what a viewer sees ---------------------------------------------


async def build_view(
    flow: Workflow,
    approval: ApprovalRecord,
    viewer: str | None,
    votes: list[VoteRecord] | None = None,
) -> ApprovalView:
    """The approval as `viewer` sees it (None: no particular viewer, nothing allowed)."""
    if votes is None:
        votes = (await flow.store.votes([approval.approval_id]))[approval.approval_id]
    current = tuple(v for v in votes if digests_equal(v.digest, approval.arguments_digest))
    voters = tuple(counted_voters(approval, votes))
    standing = None  # only a decided approval can stand (pending ones need no lookup)
    if approval.status != "pending":
        standing = await flow.store.get_standing_decision(approval.approval_id)
        standing = standing if standing is not None and standing.active else None
    can_decide = can_revoke = can_reconcile = False
    why_not: str | None = None
    if viewer is not None:
        verdict = await eligibility(flow, approval, viewer)
        if approval.status != "pending":
            why_not = f"it is {approval.status}"
        elif isinstance(verdict, NotEligible):
            why_not = verdict.reason
        elif any(vote.voter == viewer for vote in current):
            why_not = "you already voted on these arguments"
        can_decide = why_not is None
        can_revoke = revoke_refusal(flow.policy, verdict, approval, viewer) is None or (
            standing is not None and may_revoke(flow.policy, verdict, approval, viewer)
        )  # a decision that stands for the run may be ended after its own call ran
        can_reconcile = may_reconcile(flow.policy, verdict, viewer)
    rule = flow.rule_for(approval.tool_name)
    return ApprovalView(
        approval=approval,
        votes=current,
        approvals_count=len(voters),
        required=approval.required_approvals,
        voters=voters,
        approvers=rule.approvers,
        can_decide=can_decide,
        can_revoke=can_revoke,
        can_reconcile=can_reconcile,
        why_not=why_not,
        can_stand=can_decide and rule.allow_always and approval.required_approvals == 1,
        standing=standing,
    )


async def views_of(
    flow: Workflow, approvals: list[ApprovalRecord], viewer: str | None
) -> list[ApprovalView]:
    votes = await flow.store.votes([a.approval_id for a in approvals])
    return [await build_view(flow, a, viewer, votes[a.approval_id]) for a in approvals]


async def _tool_filter(flow: Workflow, viewer: str) -> tuple[list[str] | None, list[str]]:
    """(only these tools | None for any, except these) that `viewer` may ever approve,
    ignoring the self-approval rule (checked per row)."""

    async def possible(rule: ToolRule) -> bool:
        verdict = await is_eligible(rule, viewer, requester=None, groups=flow.groups)
        return isinstance(verdict, Eligible)

    policy = flow.policy
    named = {name: await possible(rule) for name, rule in policy.tools.items()}
    if await possible(policy.defaults):
        return None, sorted(name for name, ok in named.items() if not ok)
    return sorted(name for name, ok in named.items() if ok), []


async def pending_for(
    flow: Workflow, viewer: str, *, limit: int, cursor: str | None
) -> Page[ApprovalView]:
    """Pending approvals `viewer` may decide, oldest first, by keyset pages."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"a page holds 1 to {MAX_LIMIT} approvals, not {limit}")
    after = decode_cursor(cursor) if cursor else None
    only, excluded = await _tool_filter(flow, viewer)
    self_allowed = flow.policy.defaults.allow_self_approval or any(
        rule.allow_self_approval for rule in flow.policy.tools.values()
    )
    found: list[ApprovalView] = []
    for _ in range(MAX_PAGES_PER_CALL):
        batch = await flow.store.pending_page(
            after=after,
            limit=limit + 1,
            not_requested_by=None if self_allowed else viewer,
            tool_names=only,
            except_tool_names=excluded,
            origin=flow.origin,
        )
        views = await views_of(flow, batch, viewer)
        for index, view in enumerate(views):
            after = (view.approval.created_at, view.approval.approval_id)
            if view.can_decide:
                found.append(view)
            if len(found) == limit:
                last = index == len(views) - 1 and len(batch) <= limit
                return Page(items=tuple(found), next_cursor=None if last else encode_cursor(after))
        if len(batch) <= limit:
            return Page(items=tuple(found), next_cursor=None)
    return Page(items=tuple(found), next_cursor=encode_cursor(after) if after else None)
