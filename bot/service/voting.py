"""Decisions under the policy: votes toward a quorum and approve-with-changes (revocation
is bot.service.revocation).

Each operation checks the person against the policy (bot.service.authority; refusals
are audited) and, to approve a call its card cuts, that they read it whole
(bot.service.reading), then asks the store for one conditional transaction
(`Store.vote`), updates the card, and resumes the run when its last open approval
closed (in a task the service owns).

Each comes in two steps: `record_*` ends with the commit and answers a `Recorded`,
whose `finish()` does the rest (card, resume). A Slack submission is answered between
the two, so a person is told "done" only for a decision the database already has.
`bot.service.deciding.DecisionOperations` is the service's face of them:
`ApprovalService` exposes its bound methods as its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from bot.canonical import canonical_arguments, digests_equal
from bot.errors import (
    AlreadyDecidedError,
    ConflictError,
    InputError,
    NotAuthorizedError,
    ResolutionError,
)
from bot.review.snapshot import ReviewSnapshot, carried_redactions
from bot.runtime import AgentRun, PendingCall
from bot.service.amend import amended_state, built, can_change, edit_for, pending_call
from bot.service.answers import DecisionResult, Recorded
from bot.service.asking import card_snapshot, engine_stamp
from bot.service.authority import (
    already_decided,
    counted_voters,
    refuse,
    require_decider,
    require_own_say,
    require_snapshot_key,
    why_not_stand,
)
from bot.service.events import ApprovalDecided, ApprovalExpired, ApprovalUpdated
from bot.service.reading import has_seen_all, refuse_unsealed, unread
from bot.service.resume import resume_if_all_decided
from bot.service.standing import apply_decision
from bot.service.views import build_view
from bot.service.windows import open_window, window_offer
from bot.service.workflow import Workflow
from store.records import Amendment, ApprovalRecord, RunRecord, VoteOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Ballot:
    approval_id: str
    approve: bool
    decider: str
    reason: str
    message: str | None = None
    digest: str | None = None  # the digest the decider saw (None: whatever is current)
    via: str | None = None  # the audit's `via` of the vote (None: the service's surface)


async def check_ballot(flow: Workflow, ballot: Ballot) -> tuple[ApprovalRecord, RunRecord]:
    """The approval and run, when this person may vote on it now (refusals audited)."""
    if not ballot.decider.strip():
        raise InputError("a decision needs the decider's id")
    approval, run = await flow.require_approval(ballot.approval_id)
    if approval.status != "pending":
        await refuse(flow, approval, actor=ballot.decider, why="closed")
        raise already_decided(approval)
    verdict = await require_decider(flow, approval, ballot.decider)
    if ballot.approve and approval.snapshot_seal != "valid":
        await require_snapshot_key(flow, approval)
        raise await refuse_unsealed(flow, approval, actor=ballot.decider)
    rule = flow.rule_for(approval.tool_name)
    if rule.require_reason and not ballot.reason.strip():
        await refuse(flow, approval, actor=ballot.decider, why="reason_required")
        raise InputError("a reason is required for this decision")
    if ballot.digest is not None and not digests_equal(ballot.digest, approval.arguments_digest):
        # Checked again in the store's vote; refused here before an edit writes anything.
        await refuse(flow, approval, actor=ballot.decider, why="stale_digest")
        raise stale_digest(approval)
    if ballot.approve and not await has_seen_all(flow, approval, ballot.decider):
        await refuse(flow, approval, actor=ballot.decider, why="unread")
        raise unread(approval)
    if ballot.approve and approval.required_approvals > 1:
        await require_own_say(flow, approval, ballot.decider, verdict)
    return approval, run


async def record_vote(flow: Workflow, ballot: Ballot) -> Recorded[DecisionResult]:
    """Vote (see `ApprovalService.decide`): committed here; `finish()` settles it (card,
    resume, or the refusal the store's answer means)."""
    approval, run = await check_ballot(flow, ballot)
    outcome = await _vote(flow, ballot, approval)
    return _recorded(flow, run, ballot, outcome)


async def record_standing_vote(flow: Workflow, ballot: Ballot) -> Recorded[DecisionResult]:
    """A vote that, once it decides the approval, stands for the rest of the run (see
    bot.service.standing): refused unless the policy allows it for the tool. The
    standing decision, and its votes on the run's other pending calls of the tool, are
    committed here too."""
    approval, run = await check_ballot(flow, ballot)
    if why_not_stand(flow.rule_for(approval.tool_name), approval) is not None:
        await refuse(flow, approval, actor=ballot.decider, why="standing_not_allowed")
        raise NotAuthorizedError(
            f"the policy does not let a decision on {approval.tool_name} stand for the rest "
            "of the run (allow_always, with one required approval)"
        )
    outcome = await _vote(flow, ballot, approval)
    if outcome.result == "decided":
        decision = await flow.store.add_standing_decision(approval.approval_id, via=flow.via)
        pending = await flow.store.list_approvals(run_id=run.run_id, status="pending")
        same_tool = [other for other in pending if other.tool_name == approval.tool_name]
        await apply_decision(flow, run, same_tool, decision)
    return _recorded(flow, run, ballot, outcome)


async def record_window_vote(flow: Workflow, ballot: Ballot) -> Recorded[DecisionResult]:
    """An approval that, once it approves the call, opens an approval window over later
    matching calls of the tool (bot.service.windows): refused unless the policy allows it
    for the tool. The window is opened here too, before the answer."""
    approval, run = await check_ballot(flow, ballot)
    if not ballot.approve or window_offer(flow.rule_for(approval.tool_name), approval) is None:
        await refuse(flow, approval, actor=ballot.decider, why="window_not_allowed")
        raise NotAuthorizedError(
            f"the policy does not let an approval of {approval.tool_name} cover later calls "
            "for a while (allow_window, with one required approval)"
        )
    state = await flow.load_state(run.run_id)
    call = pending_call(state, approval)
    if not digests_equal(state.call_digest(call), ballot.digest or approval.arguments_digest):
        raise stale_digest(approval)  # an edit landed meanwhile: match what was approved only
    outcome = await _vote(flow, ballot, approval)
    if outcome.result == "decided":
        await open_window(flow, outcome.record, call.arguments)
    return _recorded(flow, run, ballot, outcome)


async def recorded_vote(
    flow: Workflow, ballot: Ballot, approval: ApprovalRecord, run: RunRecord
) -> tuple[Recorded[DecisionResult], bool]:
    """The store's vote on a ballot `check_ballot` passed, and whether the store counted
    it (False: `finish()` raises the refusal its answer means)."""
    outcome = await _vote(flow, ballot, approval)
    return _recorded(flow, run, ballot, outcome), outcome.result in ("counted", "decided")


def _recorded(
    flow: Workflow, run: RunRecord, ballot: Ballot, outcome: VoteOutcome
) -> Recorded[DecisionResult]:
    return Recorded(approval=outcome.record, finish=partial(settle, flow, run, ballot, outcome))


async def _vote(
    flow: Workflow,
    ballot: Ballot,
    approval: ApprovalRecord,
    *,
    amend: Amendment | None = None,
) -> VoteOutcome:
    """The ballot as one store vote, on the digest the decider saw (default: current)."""
    return await flow.store.vote(
        ballot.approval_id,
        decision="approved" if ballot.approve else "rejected",
        voter=ballot.decider,
        digest=ballot.digest or approval.arguments_digest,
        reason=ballot.reason.strip() or None,
        message=None if ballot.approve else (ballot.message or "").strip() or None,
        amend=amend,
        now=flow.clock(),
        via=ballot.via or flow.via,
    )


async def settle(
    flow: Workflow,
    run: RunRecord,
    ballot: Ballot,
    outcome: VoteOutcome,
) -> DecisionResult:
    record = outcome.record
    voters = tuple(counted_voters(record, list(outcome.votes)))
    if outcome.result == "decided":
        flow.telemetry.approval_closed(record)
        # The card is updated while the resume is claimed and starts: the call's effect
        # waits neither for Slack's round trip nor for the reads only the card needs
        # (later updates of the card wait for it).
        card = flow.notify_beside(record.approval_id, partial(_decided, flow, run, record))
        started = await resume_if_all_decided(flow, record.run_id)
        await card
        return _result(record, voters, resume_started=started)
    if outcome.result == "counted":
        standing = await flow.standing(run.run_id)
        view = await build_view(flow, record, None)
        await flow.notify(ApprovalUpdated(run=run, view=view, standing=standing))
        return _result(record, voters, resume_started=False)
    await refuse(flow, record, actor=ballot.decider, why=outcome.result)
    if outcome.result == "expired":
        flow.telemetry.approval_closed(record)
        await flow.notify(ApprovalDecided(run=run, approval=record))
        await flow.notify(ApprovalExpired(run=run, approval=record))
        await resume_if_all_decided(flow, record.run_id)
        raise already_decided(record)
    if outcome.result == "already_voted":
        raise AlreadyDecidedError(
            f"you already voted on this call; it needs {record.required_approvals} "
            f"approvals from different people ({len(voters)} so far)",
            status=record.status,
            decider=ballot.decider,
        )
    if outcome.result == "stale_digest":
        raise stale_digest(record)
    raise already_decided(record)


async def _decided(flow: Workflow, run: RunRecord, record: ApprovalRecord) -> ApprovalDecided:
    """The card update of a decided approval: with the run's standing decisions and the
    window the approval opened, if any."""
    standing = await flow.standing(run.run_id)
    window = await flow.store.get_window(record.approval_id)
    return ApprovalDecided(run=run, approval=record, standing=standing, window=window)


def stale_digest(record: ApprovalRecord) -> ResolutionError:
    return ResolutionError(
        "the arguments changed since you saw them (now digest "
        f"{record.arguments_digest[:12]}…); look at the card again"
    )


def _result(
    record: ApprovalRecord, voters: tuple[str, ...], *, resume_started: bool
) -> DecisionResult:
    return DecisionResult(
        approval=record,
        resume_started=resume_started,
        approvals_count=len(voters),
        required=record.required_approvals,
        voters=voters,
    )


async def record_change(
    flow: Workflow,
    ballot: Ballot,
    arguments: Mapping[str, Any],
) -> Recorded[DecisionResult]:
    """Approve with changes (see `ApprovalService.approve_with_changes`): the changed
    arguments and the approval of them, committed; `finish()` settles."""
    approval, run = await check_ballot(flow, ballot)
    if run.status != "paused":
        raise ResolutionError(f"run {run.run_id} is {run.status}; try again when it is paused")
    state = await flow.load_state(run.run_id)
    agent = await built(flow.registry.get(state.agent_name, state.agent_version))
    call = pending_call(state, approval)
    new_arguments = edit_for(agent, state, call, arguments)
    if new_arguments is None:
        per_call = can_change(agent, state, call)
        raise InputError(not_amendable(run) if per_call is None else tool_not_amendable(call))
    if canonical_arguments(new_arguments) == canonical_arguments(call.arguments):
        return await record_vote(flow, ballot)  # nothing changed: a plain approval
    amended = amended_state(agent, state, call, new_arguments)  # `state` stays, to undo
    # What the card hid before stays hidden (the approver may not have seen it either).
    hidden = carried_redactions(
        ReviewSnapshot.from_json(approval.snapshot), call.arguments, new_arguments
    )
    snapshot = card_snapshot(agent, amended, pending_call(amended, approval), keep_hidden=hidden)
    saved = await _save_state(flow, run, amended)
    amendment = Amendment(arguments_digest=snapshot.digest, snapshot=snapshot.to_json())
    outcome = await _vote(flow, ballot, approval, amend=amendment)
    if outcome.result not in ("counted", "decided"):
        # The change did not land (closed, expired, edited meanwhile): put the state
        # back. Were this lost in a crash, the resume would find state and row
        # disagreeing and ask again rather than run either version (fail closed).
        try:
            saved = await _save_state(flow, saved, state)
        except ResolutionError:
            log.warning("run %s moved on before an unlanded edit was undone", run.run_id)
    return _recorded(flow, saved, ballot, outcome)


def not_amendable(run: RunRecord) -> str:
    """Why a call of `run` cannot be approved with changes (its engine has no clean way
    to override a call's arguments)."""
    engine = run.engine.name if run.engine is not None else "another engine"
    return (
        f"approve with changes is not offered for runs of {engine} agents: approve or "
        "reject the call as it is (the requester can ask again with other arguments)"
    )


def tool_not_amendable(call: PendingCall) -> str:
    """Why a call its engine cannot check new arguments for cannot be approved with
    changes."""
    return (
        f"approve with changes is not offered for {call.tool_name}: its input schema cannot "
        "be checked safely; approve or reject the call as it is"
    )


async def _save_state(flow: Workflow, run: RunRecord, state: AgentRun) -> RunRecord:
    try:
        return await flow.store.save_run_state(
            run.run_id,
            expected_version=run.version,
            state_json=await flow.encode_state(state),
            status="paused",
            schema_version=state.schema_version,
            engine=engine_stamp(state.engine),
        )
    except ConflictError:
        raise ResolutionError(
            "the run changed while you edited (another decision or edit landed); "
            "look at the card again"
        ) from None
