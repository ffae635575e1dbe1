"""Who may do what to an approval, by the policy: see, decide, revoke, reconcile.

The rules are pure functions of the policy, the person's eligibility for the call's tool
(a verdict of `bot.policy.eligibility.is_eligible`, taken with the call's requester so
that the self-approval rule holds), the approval and the person. The operations (bot.service.
voting, bot.service.reconcile) and the read model below (`ApprovalView`: what a viewer is
shown they may do) call the same functions, so the two cannot drift apart. An operation
audits every refusal (`refused`, with `why`) before it raises. The eligibility of every
counted voter is checked again right before an approved call executes
(`execution_check`): a person removed from the approver group since stops it. Counted
there are only the votes whose seals verify (bot.service.sealed): a status, vote or
quorum written into the database without the keys runs nothing.

The read model's pending list must stay fast with thousands of approvals waiting: the
policy is turned into a filter the store's index can serve (the tools the viewer may
approve, the viewer's own runs left out unless self approval is allowed somewhere), and
what only the policy can tell (a group membership, a vote already cast) is checked on
the page, fetching the next keyset page while the page is not full.

A call is shown to and decided by members of the channel it was asked in only (admins
aside; its requester still sees it and may revoke it): a person outside a private
channel must not read its calls' arguments in a list, App Home or a modal, nor decide
them. The policy's verdict is narrowed by membership (`scoped`), so deciding, revoking,
reconciling, the read model and the check right before a call runs all apply it; the
directory (Slack's `conversations.members`, cached briefly) answers "not a member" when
it cannot tell. A call asked in a direct message with the bot, or started from code, is
scoped by the policy alone (`channel_scope`): the DM's only other member is its
requester, who may not decide their own call, so its approvers decide it from App Home
or `/approvals`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from bot.canonical import digests_equal
from bot.errors import InputError, NotAuthorizedError
from bot.policy.eligibility import Eligibility, Eligible, NotEligible, is_eligible
from bot.policy.rules import Policy, ToolRule
from bot.service import reading
from bot.service.api import ApprovalView, Page, decode_cursor, encode_cursor
from bot.service.last_check import Refusal
from bot.service.sealed import sealed_quorum
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, VoteRecord

MAX_LIMIT = 100
MAX_PAGES_PER_CALL = 20
RECENT_SCAN_FACTOR = 5  # recent decisions read per one shown, when filtered for a viewer
REVOCABLE_STATUSES = frozenset({"pending", "approved"})  # approved: until the call runs

RevokeRefusal = Literal["not_authorized", "closed"]
NOT_A_CHANNEL_MEMBER = NotEligible(
    code="not_a_channel_member",
    reason="you are not a member of the channel this call was asked in; only its members "
    "see and decide it",
)

# -- the rules (pure) ------------------------------------------------------------------


def channel_scope(channel: str | None) -> str | None:
    """The conversation whose members alone see and decide a call asked in `channel`;
    None when the policy alone scopes it: a call started from code (no channel) or in a
    direct message with the bot (`D…`)."""
    if channel is None or channel.startswith("D"):
        return None
    return channel


def scoped(policy: Policy, verdict: Eligibility, user: str, *, member: bool | None) -> Eligibility:
    """The policy's `verdict` within the call's channel: someone who is not a member
    (`member` False) is not eligible, whatever the policy says, unless an admin.
    `member` None: the call has no channel to be a member of."""
    if member is False and not policy.is_admin(user):
        return NOT_A_CHANNEL_MEMBER
    return verdict


def may_see(policy: Policy, approval: ApprovalRecord, user: str, *, member: bool | None) -> bool:
    """Who is shown a call (its arguments, votes, trail): the policy's admins, the call's
    requester, and members of its channel (everyone, for a call with no channel scope)."""
    return member is not False or policy.is_admin(user) or user == approval.requester


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


async def refuse_request(
    flow: Workflow,
    *,
    actor: str | None,
    why: str,
    approval_id: str | None,
    detail: Mapping[str, Any],
) -> None:
    """Audit a request the layer above refused before it reached an operation (`refused`,
    detail.why): with the approval and run when `approval_id` names an approval."""
    approval = await flow.store.get_approval(approval_id) if approval_id else None
    await flow.store.append_audit(
        "refused",
        actor=actor,
        run_id=approval.run_id if approval else None,
        approval_id=approval.approval_id if approval else None,
        detail={"why": why, **detail},
    )


async def member_of(flow: Workflow, channel: str | None, user: str) -> bool | None:
    """Is `user` a member of the conversation that scopes a call asked in `channel`?
    None when nothing scopes it (see `channel_scope`; no channel directory) or the user
    is an admin (not asked)."""
    scope = channel_scope(channel)
    if scope is None or flow.channels is None or flow.policy.is_admin(user):
        return None
    return await flow.channels.is_member(scope, user)


async def membership(flow: Workflow, approval: ApprovalRecord, user: str) -> bool | None:
    """`member_of` the approval's channel: where its card is, else where its run is."""
    if flow.channels is None or flow.policy.is_admin(user):
        return None
    channel = approval.slack_channel or (await flow.run_of(approval)).channel
    return await member_of(flow, channel, user)


async def eligibility(
    flow: Workflow, approval: ApprovalRecord, user: str, *, member: bool | None = None
) -> Eligibility:
    """May `user` decide the approval's call, by the policy (the approval's requester is
    the call's requester) within its channel (`member`, when the caller already asked)."""
    verdict = await is_eligible(
        flow.rule_for(approval.tool_name),
        user,
        requester=approval.requester,
        groups=flow.groups,
    )
    if member is None:
        member = await membership(flow, approval, user)
    return scoped(flow.policy, verdict, user, member=member)


async def require_visible(flow: Workflow, approval: ApprovalRecord, user: str) -> bool | None:
    """NotAuthorizedError when `user` may not see the call; else their membership."""
    member = await membership(flow, approval, user)
    if not may_see(flow.policy, approval, user, member=member):
        raise NotAuthorizedError(NOT_A_CHANNEL_MEMBER.reason)
    return member


async def require_decider(flow: Workflow, approval: ApprovalRecord, user: str) -> ToolRule:
    """The tool's rule when `user` may decide; else audit and NotAuthorizedError."""
    verdict = await eligibility(flow, approval, user)
    if isinstance(verdict, NotEligible):
        await refuse(flow, approval, actor=user, why=verdict.code)
        raise NotAuthorizedError(verdict.reason)
    return flow.rule_for(approval.tool_name)


async def execution_check(flow: Workflow, approval: ApprovalRecord) -> Refusal | None:
    """Why an approved call may not run now, or None: its decision does not stand on
    sealed votes (bot.service.sealed; tampering), or a counted voter is no longer
    eligible."""
    evidence = await flow.store.decision_evidence(approval.approval_id)
    if evidence is None:
        return Refusal(why="its approval record is gone")
    quorum = sealed_quorum(evidence)
    if quorum.problem is not None:
        return Refusal(why=quorum.problem, tampered=True)
    for voter in quorum.voters:
        verdict = await eligibility(flow, evidence.approval, voter)
        if isinstance(verdict, NotEligible):
            return Refusal(why=f"approver {voter} is no longer eligible ({verdict.code})")
    return None


# -- the rules applied to what a viewer sees ---------------------------------------------


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
        can_stand=can_decide and rule.allow_always and approval.required_approvals == 1,
        standing=standing,
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
