"""Read models: approvals as a viewer sees them (see bot.service.views).

The pending list is the one that must stay fast with thousands of approvals waiting:
the policy is turned into a filter the store's index can serve (the tools the viewer
may approve, the viewer's own runs left out unless self approval is allowed somewhere),
and what only the policy can tell (a group membership, a vote already cast) is checked
on the page, fetching the next keyset page while the page is not full.
"""

from __future__ import annotations

from bot.errors import InputError
from bot.policy import Eligible, NotEligible, ToolRule, is_eligible
from bot.service.authority import counted_voters, eligibility
from bot.service.parts import ServiceParts
from bot.service.views import ApprovalView, Page, decode_cursor, encode_cursor
from store.api import ApprovalRecord, VoteRecord

MAX_LIMIT = 100
MAX_PAGES_PER_CALL = 20


async def build_view(
    parts: ServiceParts,
    approval: ApprovalRecord,
    viewer: str | None,
    votes: list[VoteRecord] | None = None,
) -> ApprovalView:
    if votes is None:
        votes = (await parts.store.votes([approval.approval_id]))[approval.approval_id]
    current = tuple(vote for vote in votes if vote.digest == approval.arguments_digest)
    voters = tuple(counted_voters(approval, votes))
    rule = parts.rule_for(approval.tool_name)
    can_decide, why_not = False, None
    can_revoke = can_reconcile = False
    if viewer is not None:
        verdict = await eligibility(parts, approval, viewer)
        voted = any(vote.voter == viewer for vote in current)
        if approval.status != "pending":
            why_not = f"it is {approval.status}"
        elif isinstance(verdict, NotEligible):
            why_not = verdict.reason
        elif voted:
            why_not = "you already voted on these arguments"
        else:
            can_decide = True
        # the rules of may_revoke and may_reconcile, over the verdict already at hand
        eligible = isinstance(verdict, Eligible) or parts.policy.is_admin(viewer)
        open_ = approval.status in ("pending", "approved")
        can_revoke = open_ and (eligible or viewer == approval.requester)
        can_reconcile = eligible
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
    )


async def views_of(
    parts: ServiceParts, approvals: list[ApprovalRecord], viewer: str | None
) -> list[ApprovalView]:
    votes = await parts.store.votes([a.approval_id for a in approvals])
    return [await build_view(parts, a, viewer, votes[a.approval_id]) for a in approvals]


async def _tool_filter(parts: ServiceParts, viewer: str) -> tuple[list[str] | None, list[str]]:
    """(only these tools | None for any, except these) that `viewer` may ever approve,
    ignoring the self-approval rule (checked per row)."""

    async def possible(rule: ToolRule) -> bool:
        verdict = await is_eligible(rule, viewer, requester=None, groups=parts.groups)
        return isinstance(verdict, Eligible)

    policy = parts.policy
    named = {name: await possible(rule) for name, rule in policy.tools.items()}
    if await possible(policy.defaults):
        return None, sorted(name for name, ok in named.items() if not ok)
    return sorted(name for name, ok in named.items() if ok), []


async def pending_for(
    parts: ServiceParts, viewer: str, *, limit: int, cursor: str | None
) -> Page[ApprovalView]:
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"a page holds 1 to {MAX_LIMIT} approvals, not {limit}")
    after = decode_cursor(cursor) if cursor else None
    only, excluded = await _tool_filter(parts, viewer)
    self_allowed = parts.policy.defaults.allow_self_approval or any(
        rule.allow_self_approval for rule in parts.policy.tools.values()
    )
    found: list[ApprovalView] = []
    for _ in range(MAX_PAGES_PER_CALL):
        batch = await parts.store.pending_page(
            after=after,
            limit=limit + 1,
            not_requested_by=None if self_allowed else viewer,
            tool_names=only,
            except_tool_names=excluded,
        )
        views = await views_of(parts, batch, viewer)
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
