"""The read models, built for one viewer by the rules of bot.service.authority: an
approval as they see it (`ApprovalView`, with what they may do), the pending approvals
they may decide, the recent decisions they may see.

The pending list must stay fast with thousands of approvals waiting: the policy is
turned into a filter the store's index can serve (the tools the viewer may approve, the
viewer's own runs left out unless self approval is allowed somewhere), and what only the
policy can tell (a group membership, a vote already cast) is checked on the page,
fetching the next keyset page while the page is not full.
"""

from __future__ import annotations

from bot.canonical import digests_equal
from bot.errors import InputError, NotAuthorizedError
from bot.policy.eligibility import Eligible, NotEligible, in_any, is_eligible
from bot.policy.rules import ToolRule
from bot.service import reading
from bot.service.api import ApprovalView, Page, decode_cursor, encode_cursor
from bot.service.authority import (
    NOT_A_CHANNEL_MEMBER,
    counted_voters,
    eligibility,
    may_reconcile,
    may_revoke,
    may_see,
    membership,
    revoke_refusal,
    why_not_stand,
)
from bot.service.waiting import waited_seconds
from bot.service.widening import absences_covered
from bot.service.windows import window_offer
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, VoteRecord

MAX_LIMIT = 100
MAX_PAGES_PER_CALL = 20
RECENT_SCAN_FACTOR = 5  # recent decisions read per one shown, when filtered for a viewer


async def build_view(
    flow: Workflow,
    approval: ApprovalRecord,
    viewer: str | None,
    votes: list[VoteRecord] | None = None,
) -> ApprovalView:
    """The approval as `viewer` sees it (None: no particular viewer, nothing allowed).
    NotAuthorizedError when the viewer may not see it (not a member of its channel)."""
    view = await visible_view(flow, approval, viewer, votes)
    if view is None:
        raise NotAuthorizedError(NOT_A_CHANNEL_MEMBER.reason)
    return view


async def visible_view(
    flow: Workflow,
    approval: ApprovalRecord,
    viewer: str | None,
    votes: list[VoteRecord] | None = None,
) -> ApprovalView | None:
    """The approval as `viewer` sees it, or None when they may not see it."""
    member = await membership(flow, approval, viewer) if viewer is not None else None
    if viewer is not None and not may_see(flow.policy, approval, viewer, member=member):
        return None
    if votes is None:
        votes = (await flow.store.votes([approval.approval_id]))[approval.approval_id]
    current = tuple(v for v in votes if digests_equal(v.digest, approval.arguments_digest))
    voters = tuple(counted_voters(approval, votes))
    standing = None  # only a decided approval can stand (pending ones need no lookup)
    if approval.status != "pending":
        standing = await flow.store.get_standing_decision(approval.approval_id)
        standing = standing if standing is not None and standing.active else None
    can_decide = can_revoke = can_reconcile = has_read = False
    why_not: str | None = None
    must_read = not reading.card_shows_all(approval.snapshot)
    if viewer is not None:
        has_read = must_read and await reading.has_read(flow, approval, viewer)
        verdict = await eligibility(flow, approval, viewer, member=member)
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
        must_read=must_read,
        has_read=has_read,
        can_stand=can_decide and why_not_stand(rule, approval) is None,
        window=window_offer(rule, approval) if can_decide else None,
        standing=standing,
        waited_seconds=waited_seconds(approval, flow.clock()),
    )


async def recent_decisions(
    flow: Workflow, *, limit: int, viewer: str | None
) -> list[ApprovalRecord]:
    """The latest decisions; with a `viewer`, the first `limit` they may see among the
    latest RECENT_SCAN_FACTOR x `limit`."""
    if viewer is None:
        return await flow.store.recent_decisions(limit=limit, origin=flow.origin)
    shown: list[ApprovalRecord] = []
    latest = await flow.store.recent_decisions(limit=limit * RECENT_SCAN_FACTOR, origin=flow.origin)
    for approval in latest:
        if len(shown) == limit:
            break
        if may_see(flow.policy, approval, viewer, member=await membership(flow, approval, viewer)):
            shown.append(approval)
    return shown


async def views_of(
    flow: Workflow, approvals: list[ApprovalRecord], viewer: str | None
) -> list[ApprovalView]:
    """The approvals `viewer` may see, as they see them (the others left out)."""
    votes = await flow.store.votes([a.approval_id for a in approvals])
    views = [await visible_view(flow, a, viewer, votes[a.approval_id]) for a in approvals]
    return [view for view in views if view is not None]


async def _tool_filter(flow: Workflow, viewer: str) -> tuple[list[str] | None, list[str]]:
    """(only these tools | None for any, except these) that `viewer` may ever approve,
    ignoring the self-approval rule (checked per row): as an approver or a person an
    escalation step names; any tool while they stand in for someone (checked per row)."""

    async def possible(rule: ToolRule) -> bool:
        verdict = await is_eligible(rule, viewer, requester=None, groups=flow.groups)
        if isinstance(verdict, Eligible):
            return True
        escalation = tuple(sorted(rule.escalation_ids()))
        return await in_any(escalation, viewer, flow.groups) is not None

    policy = flow.policy
    named = {name: await possible(rule) for name, rule in policy.tools.items()}
    if await possible(policy.defaults):
        only, excluded = None, sorted(name for name, ok in named.items() if not ok)
    else:
        only, excluded = sorted(name for name, ok in named.items() if ok), []
    if only is None and not excluded:
        return only, excluded  # every tool already: standing in for someone adds none
    if await absences_covered(flow, viewer, flow.clock()):
        return None, []
    return only, excluded


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
        votes = await flow.store.votes([approval.approval_id for approval in batch])
        for index, approval in enumerate(batch):
            after = (approval.created_at, approval.approval_id)
            view = await visible_view(flow, approval, viewer, votes[approval.approval_id])
            if view is not None and view.can_decide:
                found.append(view)
            if len(found) == limit:
                last = index == len(batch) - 1 and len(batch) <= limit
                return Page(items=tuple(found), next_cursor=None if last else encode_cursor(after))
        if len(batch) <= limit:
            return Page(items=tuple(found), next_cursor=None)
    return Page(items=tuple(found), next_cursor=encode_cursor(after) if after else None)
