"""The service's face of the deciding operations (bot.service.voting, revocation and
approval windows): `ApprovalService` exposes the bound methods of `DecisionOperations`
as its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.errors import InputError
from bot.service.answers import DecisionResult, Recorded
from bot.service.revocation import record_revocation
from bot.service.voting import (
    Ballot,
    record_change,
    record_standing_vote,
    record_vote,
    record_window_vote,
)
from bot.service.workflow import Workflow
from store.records import ApprovalRecord


class DecisionOperations:
    """The deciding operations of `ApprovalService` (see the module doc)."""

    def __init__(self, flow: Workflow) -> None:
        self._flow = flow

    async def decide(
        self,
        approval_id: str,
        *,
        approve: bool,
        decider: str,
        reason: str,
        message: str | None = None,
        digest: str | None = None,
        always: bool = False,
        window: bool = False,
    ) -> DecisionResult:
        """Record one person's vote under the policy.

        Refused (audited `refused`): NotAuthorizedError when the decider is not eligible
        (not an approver or a member of an approver group; not a member of the call's
        channel; the requester unless the rule allows self approval), and its
        ArgumentsUnreadError when they approve a call the card cuts without having read
        its arguments whole (`read_in_full`); InputError for an unknown approval, a
        blank decider, or a blank reason when the rule requires one; AlreadyDecidedError
        when the approval is closed, expired (it becomes `expired` now, its card is
        updated and the run goes on) or this person already voted on these arguments
        (each person counts once); ResolutionError when `digest` (the one the decider
        saw) is no longer current.

        An approval stays `pending` until `required_approvals` distinct eligible people
        approved the current arguments; one rejection rejects. A counted vote updates
        the card (`ApprovalUpdated`); a closing one `ApprovalDecided`, and when it was
        the run's last open approval the resume is claimed and runs in a service task.

        `always`: the decision stands for the rest of the run (bot.service.standing):
        every later call of the tool in this run is decided the same way, each by its own
        approval with the same checks, until the decision is revoked. Only where the
        policy allows it for the tool (NotAuthorizedError otherwise, audited).

        `window`: the approval opens an approval window (bot.service.windows): later calls
        of the tool whose matched arguments are equal are approved in the decider's name,
        each by its own approval with the same checks, until it expires or is revoked.
        Only to approve, where the policy allows it (`allow_window`; NotAuthorizedError
        otherwise, audited); not together with `always` (InputError)."""
        recorded = await self.record_decision(
            approval_id,
            approve=approve,
            decider=decider,
            reason=reason,
            message=message,
            digest=digest,
            always=always,
            window=window,
        )
        return await recorded.finish()

    async def record_decision(
        self,
        approval_id: str,
        *,
        approve: bool,
        decider: str,
        reason: str,
        message: str | None = None,
        digest: str | None = None,
        always: bool = False,
        window: bool = False,
    ) -> Recorded[DecisionResult]:
        """`decide` in two steps: this commits the vote (refusals found before the store
        raise here) and `finish()` does the rest (card, resume; refusals from the
        store's answer raise there). Tell the person in between: the vote is durable."""
        ballot = Ballot(
            approval_id=approval_id,
            approve=approve,
            decider=decider,
            reason=reason or "",
            message=message,
            digest=digest,
        )
        if always and window:
            raise InputError("choose one: for the rest of the run, or an approval window")
        if window:
            return await record_window_vote(self._flow, ballot)
        if always:
            return await record_standing_vote(self._flow, ballot)
        return await record_vote(self._flow, ballot)

    async def approve_with_changes(
        self,
        approval_id: str,
        *,
        decider: str,
        reason: str,
        arguments: Mapping[str, Any],
        digest: str | None = None,
    ) -> DecisionResult:
        """Approve the call with changed arguments.

        `arguments` are merged over the call's real stored arguments: a top-level field
        left out, or a value equal to the redaction marker (`bot.credentials.REDACTED`, as
        the card shows it), keeps its stored value, so a redacted secret is never edited
        blind. The result is validated against the tool's schema (InputError naming each
        problem, nothing changed), gets a new digest and snapshot, and every earlier vote
        stops counting; this counts as the decider's approval of the new digest (so with
        a quorum of 1 the call is approved). The run's state gets the new arguments, the
        model is told the call ran with arguments an approver changed, and the audit keeps
        both digests (`arguments_changed`). Eligibility as for `decide`; the run must be
        paused (ResolutionError otherwise)."""
        recorded = await self.record_changes(
            approval_id, decider=decider, reason=reason, arguments=arguments, digest=digest
        )
        return await recorded.finish()

    async def record_changes(
        self,
        approval_id: str,
        *,
        decider: str,
        reason: str,
        arguments: Mapping[str, Any],
        digest: str | None = None,
    ) -> Recorded[DecisionResult]:
        """`approve_with_changes` in two steps, as `record_decision` splits `decide`."""
        ballot = Ballot(
            approval_id=approval_id, approve=True, decider=decider, reason=reason, digest=digest
        )
        return await record_change(self._flow, ballot, arguments)

    async def revoke(self, approval_id: str, *, actor: str, reason: str) -> ApprovalRecord:
        """Withdraw a pending, or approved but not yet executed, call: it never runs.

        Allowed for the run's requester, anyone eligible to decide it and the policy's
        admins (NotAuthorizedError otherwise, audited `refused`). A blank reason ->
        InputError; already executed or closed -> AlreadyDecidedError. The card is
        updated (`ApprovalDecided`, status `revoked`, `revoked_by`, `reason`), and the run
        resumes with the call rejected when nothing else is open.

        When the approval made a decision that stands for the rest of the run, that ends
        too (`standing_revoked`): later calls of the tool are asked again. That works
        after the call itself ran (the approval then stays as it is)."""
        recorded = await self.record_revocation(approval_id, actor=actor, reason=reason)
        return await recorded.finish()

    async def record_revocation(
        self, approval_id: str, *, actor: str, reason: str
    ) -> Recorded[ApprovalRecord]:
        """`revoke` in two steps, as `record_decision` splits `decide`."""
        return await record_revocation(self._flow, approval_id, actor=actor, reason=reason)
