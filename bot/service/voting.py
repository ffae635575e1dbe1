"""Decisions under the policy: votes toward a quorum, approve-with-changes, revocation.

Each operation checks the person against the policy (refusals are audited), then asks
the store for one conditional transaction (`Store.vote` / `Store.revoke`) and reports
what happened. Telling people (cards) and resuming the run are the caller's, given as
`Followup`, so this module stays free of the service's task ownership.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import (
    AlreadyDecidedError,
    ConflictError,
    InputError,
    NotAuthorizedError,
    ResolutionError,
)
from bot.runtime import CURRENT_SCHEMA_VERSION, RunState
from bot.service.amend import amend_call, edited_arguments, pending_call
from bot.service.api import ApprovalDecided, ApprovalExpired, ApprovalUpdated
from bot.service.authority import counted_voters, may_revoke, refuse, require_decider
from bot.service.codec import encode_state
from bot.service.execution import card_snapshot
from bot.service.outcomes import DecisionResult
from bot.service.parts import ServiceParts, log
from bot.service.views import ApprovalView
from store.api import Amendment, ApprovalRecord, RunRecord, VoteOutcome


@dataclass(frozen=True, kw_only=True)
class Followup:
    """What the service does after a vote or revocation lands."""

    resume_if_all_decided: Callable[[str], Awaitable[bool]]
    view: Callable[[ApprovalRecord, str | None], Awaitable[ApprovalView]]


@dataclass(frozen=True, kw_only=True)
class Ballot:
    approval_id: str
    approve: bool
    decider: str
    reason: str
    message: str | None = None
    digest: str | None = None  # the digest the decider saw (None: whatever is current)


async def open_approval(parts: ServiceParts, approval_id: str) -> tuple[ApprovalRecord, RunRecord]:
    approval = await parts.store.get_approval(approval_id)
    if approval is None:
        raise InputError(f"there is no approval with id {approval_id!r}")
    run = await parts.store.get_run(approval.run_id)
    if run is None:
        raise InputError(f"approval {approval_id} belongs to no run")
    return approval, run


async def check_ballot(parts: ServiceParts, ballot: Ballot) -> tuple[ApprovalRecord, RunRecord]:
    """The approval and run, when this person may vote on it now (refusals audited)."""
    if not ballot.decider.strip():
        raise InputError("a decision needs the decider's id")
    approval, run = await open_approval(parts, ballot.approval_id)
    if approval.status != "pending":
        await refuse(parts, approval, actor=ballot.decider, why="closed")
        raise already_decided(approval)
    rule = await require_decider(parts, approval, ballot.decider)
    if rule.require_reason and not ballot.reason.strip():
        await refuse(parts, approval, actor=ballot.decider, why="reason_required")
        raise InputError("a reason is required for this decision")
    if ballot.digest is not None and ballot.digest != approval.arguments_digest:
        # Checked again in the store's vote; refused here before an edit writes anything.
        await refuse(parts, approval, actor=ballot.decider, why="stale_digest")
        raise stale_digest(approval)
    return approval, run


async def cast(parts: ServiceParts, ballot: Ballot, followup: Followup) -> DecisionResult:
    """Vote (see `ApprovalService.decide`)."""
    approval, run = await check_ballot(parts, ballot)
    outcome = await _vote(parts, ballot, approval)
    return await settle(parts, run, ballot, outcome, followup)


async def _vote(
    parts: ServiceParts,
    ballot: Ballot,
    approval: ApprovalRecord,
    *,
    amend: Amendment | None = None,
) -> VoteOutcome:
    """The ballot as one store vote, on the digest the decider saw (default: current)."""
    return await parts.store.vote(
        ballot.approval_id,
        decision="approved" if ballot.approve else "rejected",
        voter=ballot.decider,
        digest=ballot.digest or approval.arguments_digest,
        reason=ballot.reason.strip() or None,
        message=None if ballot.approve else (ballot.message or "").strip() or None,
        amend=amend,
        now=parts.clock(),
    )


async def settle(
    parts: ServiceParts,
    run: RunRecord,
    ballot: Ballot,
    outcome: VoteOutcome,
    followup: Followup,
) -> DecisionResult:
    record = outcome.record
    voters = tuple(counted_voters(record, list(outcome.votes)))
    if outcome.result == "decided":
        await parts.notify(ApprovalDecided(run=run, approval=record))
        started = await followup.resume_if_all_decided(record.run_id)
        return _result(record, voters, resume_started=started)
    if outcome.result == "counted":
        await parts.notify(ApprovalUpdated(run=run, view=await followup.view(record, None)))
        return _result(record, voters, resume_started=False)
    await refuse(parts, record, actor=ballot.decider, why=outcome.result)
    if outcome.result == "expired":
        await parts.notify(ApprovalDecided(run=run, approval=record))
        await parts.notify(ApprovalExpired(run=run, approval=record))
        await followup.resume_if_all_decided(record.run_id)
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


async def approve_changed(
    parts: ServiceParts,
    ballot: Ballot,
    arguments: Mapping[str, Any],
    followup: Followup,
) -> DecisionResult:
    """Approve with changes (see `ApprovalService.approve_with_changes`)."""
    approval, run = await check_ballot(parts, ballot)
    if run.status != "paused":
        raise ResolutionError(f"run {run.run_id} is {run.status}; try again when it is paused")
    state = await parts.load_state(run.run_id)
    agent = parts.registry.get(state.agent_name, state.agent_version)
    call = pending_call(state, approval.tool_call_id)
    tool = agent.tool_named(call.tool_name)
    if tool is None:
        raise InputError(f"the agent has no tool {call.tool_name!r}")
    new_arguments = edited_arguments(tool, call.arguments, arguments)
    snapshot = card_snapshot(agent, call.tool_name, new_arguments)
    if snapshot.digest == approval.arguments_digest:
        return await cast(parts, ballot, followup)  # nothing changed: a plain approval
    saved = await _save_arguments(parts, run, state, call.tool_call_id, new_arguments)
    amendment = Amendment(arguments_digest=snapshot.digest, snapshot=snapshot.to_json())
    outcome = await _vote(parts, ballot, approval, amend=amendment)
    if outcome.result not in ("counted", "decided"):
        # The change did not land (closed, expired, edited meanwhile): put the state's
        # arguments back. Were this lost in a crash, the resume would find state and row
        # disagreeing and ask again rather than run either version (fail closed).
        try:
            saved = await _save_arguments(parts, saved, state, call.tool_call_id, call.arguments)
        except ResolutionError:
            log.warning("run %s moved on before an unlanded edit was undone", run.run_id)
    return await settle(parts, saved, ballot, outcome, followup)


async def revoke(
    parts: ServiceParts,
    approval_id: str,
    *,
    actor: str,
    reason: str,
    followup: Followup,
) -> ApprovalRecord:
    """Revoke (see `ApprovalService.revoke`)."""
    if not actor.strip():
        raise InputError("a revocation needs the actor's id")
    if not reason.strip():
        raise InputError("say why you revoke it")
    approval, run = await open_approval(parts, approval_id)
    if not await may_revoke(parts, approval, actor):
        await refuse(
            parts, approval, actor=actor, why="not_authorized", detail={"action": "revoke"}
        )
        raise NotAuthorizedError(
            "only the run's requester, an approver of this tool or an admin may revoke it"
        )
    outcome = await parts.store.revoke(approval_id, actor=actor, reason=reason.strip())
    if not outcome.won:
        await refuse(parts, outcome.record, actor=actor, why="closed", detail={"action": "revoke"})
        if outcome.record.status == "approved":
            raise AlreadyDecidedError(
                "this call has already started or run; it can no longer be revoked",
                status="executed",
                decider=outcome.record.decider,
                decided_at=outcome.record.decided_at,
            )
        raise already_decided(outcome.record)
    await parts.notify(ApprovalDecided(run=run, approval=outcome.record))
    await followup.resume_if_all_decided(outcome.record.run_id)
    return outcome.record


async def _save_arguments(
    parts: ServiceParts,
    run: RunRecord,
    state: RunState,
    tool_call_id: str,
    arguments: dict[str, Any],
) -> RunRecord:
    amend_call(state, tool_call_id, arguments)
    try:
        return await parts.store.save_run_state(
            run.run_id,
            expected_version=run.version,
            state_json=await encode_state(state),
            status="paused",
            schema_version=CURRENT_SCHEMA_VERSION,
        )
    except ConflictError:
        raise ResolutionError(
            "the run changed while you edited (another decision or edit landed); "
            "look at the card again"
        ) from None


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
