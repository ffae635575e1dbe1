"""Who may do what to an approval, by the policy: see, decide, revoke, reconcile.

The rules are pure functions of the policy, the person's eligibility for the call's tool
(a verdict of `bot.policy.eligibility.is_eligible`, taken with the call's requester so
that the self-approval rule holds), the approval and the person. The operations (bot.service.
voting, bot.service.reconcile) and the read models (bot.service.views: what a viewer is
shown they may do) call the same functions, so the two cannot drift apart. An operation
audits every refusal (`refused`, with `why`) before it raises. The eligibility of every
counted voter is checked again right before an approved call executes
(`execution_check`): a person removed from the approver group since stops it. Counted
there are only the votes whose seals verify (bot.service.sealed): a status, vote or
quorum written into the database without the keys runs nothing.

Besides the tool's approvers, two records widen who may decide, each only where a valid
seal vouches for it (bot.service.widening): an escalation step in force (fixed with the
request; its people may decide from its time on), and an absence (someone away whose
stand-in may decide the calls the away person may decide, never their own). A vote is
judged at the time it was cast, so a step or absence that held then still holds for it
right before the call runs; and since a stand-in uses the say of the person they stand
in for, the two count once (`principal`: refused at the vote, and again at the check).

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
from datetime import datetime
from typing import Any, Literal

from bot.canonical import digests_equal
from bot.errors import AlreadyDecidedError, ConfigError, KeyMissingError, NotAuthorizedError
from bot.policy.eligibility import Eligibility, Eligible, NotEligible, is_eligible
from bot.policy.rules import Policy, ToolRule
from bot.service.audited import AUDIT_VOTER, audit_vote_refusal
from bot.service.last_check import Refusal
from bot.service.sealed import sealed_quorum
from bot.service.widening import absences_covered, by_escalation
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, DecisionEvidence, VoteRecord

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


def why_not_stand(rule: ToolRule, approval: ApprovalRecord) -> str | None:
    """Why a decision on the approval may not stand for the rest of its run (None: it
    may): the policy must allow it for the tool (`allow_always`), and the call must need
    one approval (a standing decision is one person's)."""
    if not rule.allow_always:
        return "the policy does not allow it for this tool"
    if approval.required_approvals != 1:
        return f"the call needs {approval.required_approvals} approvals"
    return None


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


def already_decided(record: ApprovalRecord) -> AlreadyDecidedError:
    who = record.revoked_by if record.status == "revoked" else record.decider
    when = record.revoked_at if record.status == "revoked" else record.decided_at
    by = f" by {who}" if who else ""
    at = f" at {when.isoformat()}" if when else ""
    return AlreadyDecidedError(
        f"this call is already {record.status}{by}{at}",
        status=record.status,
        decider=who,
        decided_at=when,
    )


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
    flow: Workflow,
    approval: ApprovalRecord,
    user: str,
    *,
    member: bool | None = None,
    at: datetime | None = None,
) -> Eligibility:
    """May `user` decide the approval's call, by the policy (the approval's requester is
    the call's requester), widened by the escalation steps in force and the absences
    they stand in for at `at` (default now; a counted vote: when it was cast), within
    its channel (`member`, when the caller already asked)."""
    when = at or flow.clock()
    verdict = await _own(flow, approval, user, when)
    if isinstance(verdict, NotEligible) and verdict.code == "not_an_approver":
        verdict = await _as_stand_in(flow, approval, user, when) or verdict
    if member is None:
        member = await membership(flow, approval, user)
    return scoped(flow.policy, verdict, user, member=member)


async def _own(flow: Workflow, approval: ApprovalRecord, user: str, at: datetime) -> Eligibility:
    """`user`'s own say: the tool's rule, or an escalation step in force at `at`."""
    rule = flow.rule_for(approval.tool_name)
    verdict = await is_eligible(rule, user, requester=approval.requester, groups=flow.groups)
    if isinstance(verdict, NotEligible) and verdict.code == "not_an_approver":
        return await by_escalation(flow, approval, rule, user, at) or verdict
    return verdict


async def _as_stand_in(
    flow: Workflow, approval: ApprovalRecord, user: str, at: datetime
) -> Eligible | None:
    """Eligible as the stand-in of someone away at `at` who may decide the call
    themselves (by their own say and within its channel: a stand-in never gets more than
    the person they stand in for, and standing in does not pass on)."""
    for absence in await absences_covered(flow, user, at):
        away = absence.away_user
        own = await _own(flow, approval, away, at)
        member = await membership(flow, approval, away)
        if isinstance(scoped(flow.policy, own, away, member=member), Eligible):
            return Eligible(via=f"stand-in for {away}", stands_in_for=away)
    return None


def principal(voter: str, verdict: Eligibility) -> str:
    """Whose say a decision uses: the person a stand-in stands in for, else the voter's
    own. Two votes of one principal count once."""
    if isinstance(verdict, Eligible) and verdict.stands_in_for is not None:
        return verdict.stands_in_for
    return voter


async def require_visible(flow: Workflow, approval: ApprovalRecord, user: str) -> bool | None:
    """NotAuthorizedError when `user` may not see the call; else their membership."""
    member = await membership(flow, approval, user)
    if not may_see(flow.policy, approval, user, member=member):
        raise NotAuthorizedError(NOT_A_CHANNEL_MEMBER.reason)
    return member


async def require_decider(flow: Workflow, approval: ApprovalRecord, user: str) -> Eligible:
    """Why `user` may decide; else audit and NotAuthorizedError (ConfigError when this
    operator's command runs under another policy than the call was requested under)."""
    await require_same_policy(flow, approval, user)
    verdict = await eligibility(flow, approval, user)
    if isinstance(verdict, NotEligible):
        await refuse(flow, approval, actor=user, why=verdict.code)
        raise NotAuthorizedError(verdict.reason)
    return verdict


async def require_same_policy(flow: Workflow, approval: ApprovalRecord, user: str) -> None:
    """An operator's command (surface "cli") decides only under the policy the call was
    requested under: its own shell may lack the bot's APPROVALS_POLICY (and so run under
    the built-in defaults) or name another file. Refused, audited, with a line naming
    both fingerprints. The bot decides under its policy of the moment (a changed policy
    applies to pending calls from the restart on), and a row from before fingerprints
    were stored is decided as before; either way the bot's last check before a call runs
    judges every counted voter under the bot's own policy."""
    requested = approval.policy_fingerprint
    ours = flow.policy.fingerprint
    if flow.surface != "cli" or requested is None or requested == ours:
        return
    await refuse(flow, approval, actor=user, why="other_policy",
                 detail={"requested_under": requested, "deciding_under": ours})  # fmt: skip
    raise ConfigError(
        f"approval {approval.approval_id} was requested under policy {requested}; this "
        f"command runs under policy {ours} ({flow.policy.source}): run it with the bot's "
        "APPROVALS_POLICY (and settings), as its own decisions are taken"
    )


async def require_own_say(
    flow: Workflow, approval: ApprovalRecord, decider: str, verdict: Eligible
) -> None:
    """Audit and NotAuthorizedError when approving would count one person's say twice:
    a stand-in after the person they stand in for approved these arguments, or that
    person after their stand-in did (quorum means distinct people deciding)."""
    votes = (await flow.store.votes([approval.approval_id]))[approval.approval_id]
    whose = principal(decider, verdict)
    for vote in votes:
        if (
            vote.voter == decider
            or vote.decision != "approved"
            or not digests_equal(vote.digest, approval.arguments_digest)
        ):
            continue
        earlier = await eligibility(flow, approval, vote.voter, at=vote.at)
        if principal(vote.voter, earlier) == whose:
            await refuse(flow, approval, actor=decider, why="same_say", detail={"with": vote.voter})
            raise NotAuthorizedError(
                f"{vote.voter} already approved these arguments with {whose}'s say, as a "
                f"stand-in or in person; one person's say counts once"
            )


async def execution_check(flow: Workflow, approval: ApprovalRecord) -> Refusal | None:
    """Why an approved call may not run now, or None: its decision does not stand on
    sealed votes (bot.service.sealed; tampering), or a counted voter is no longer
    eligible."""
    evidence = await flow.store.decision_evidence(approval.approval_id)
    if evidence is None:
        return Refusal(why="its approval record is gone")
    return await evidence_check(flow, evidence)


async def evidence_check(flow: Workflow, evidence: DecisionEvidence) -> Refusal | None:
    """`execution_check` on the decision's evidence as just read (the last check reads
    it once: the row it checks and the seals it verifies come from the same read)."""
    approval = evidence.approval
    quorum = sealed_quorum(evidence)
    if quorum.problem is not None:
        lacking = lacking_key(evidence)
        if lacking is not None:
            raise KeyMissingError(
                f"approval {approval.approval_id}: {quorum.problem}; this process's key ring "
                f"lacks key id {lacking!r} it was sealed with: add it and restart (the run "
                "waits)",
                key_id=lacking,
            )
        return Refusal(why=quorum.problem, tampered=True)
    says: dict[str, str] = {}
    for voter in quorum.voters:
        if voter == AUDIT_VOTER:  # the policy's own approval of an audit-only call
            why = audit_vote_refusal(flow, evidence.approval)
            if why is not None:
                return Refusal(why=why)
            continue
        at = quorum.voted_at.get(voter)
        verdict = await eligibility(flow, evidence.approval, voter, at=at)
        if isinstance(verdict, NotEligible):
            return Refusal(why=f"approver {voter} is no longer eligible ({verdict.code})")
        whose = principal(voter, verdict)
        if whose in says:
            return Refusal(
                why=f"{says[whose]} and {voter} both approved with {whose}'s say (a stand-in "
                "and the person they stand in for count once)"
            )
        says[whose] = voter
    return None


def lacking_key(evidence: DecisionEvidence) -> str | None:
    """A key id this process's ring lacks that the call's request seal, or a vote on its
    current digest, was made with (None: none was): then the decision cannot be judged
    here, which is not tampering; the run waits for a process holding the key."""
    current = [
        checked
        for checked in evidence.votes
        if digests_equal(checked.vote.digest, evidence.approval.arguments_digest)
    ]
    unknown = evidence.request_seal == "unknown_key" or any(
        c.seal == "unknown_key" for c in current
    )
    if not unknown and evidence.approval.snapshot_seal != "unknown_key":
        return None
    return evidence.unknown_key_ids[0] if evidence.unknown_key_ids else None


async def require_snapshot_key(flow: Workflow, approval: ApprovalRecord) -> None:
    """KeyMissingError (an operational error, not tampering) when the call's snapshot is
    sealed with a key this process's ring lacks: it cannot be shown or decided here until
    the process restarts with the key."""
    if approval.snapshot_seal != "unknown_key":
        return
    evidence = await flow.store.decision_evidence(approval.approval_id)
    key_id = evidence.unknown_key_ids[0] if evidence and evidence.unknown_key_ids else "?"
    raise KeyMissingError(
        f"approval {approval.approval_id} cannot be decided here yet: its snapshot is sealed "
        f"with key id {key_id!r}, which this process's key ring lacks; add it and restart",
        key_id=key_id,
    )
