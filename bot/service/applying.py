"""The approval rows of a run matched with its paused calls, and applied to its state.

A resume (bot.service.resume) reads the run's approval rows and its stored state; here
each pending call finds the row that answers it (by execution key, a legacy row by its
tool call id), and each terminal row is applied to its call: approved (digest and tool
checked against the state), rejected (a rejection's message, never its reason, to the
model; an expired or revoked approval becomes a rejection the model sees), or reported
as not fitting (arguments moved since: voided and asked again) or still undecided.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from bot.canonical import digests_equal
from bot.errors import RunStateError
from bot.runtime import AgentRun, ApprovedCall, PendingCall
from store.records import LEGACY_KEY_PREFIX, ApprovalRecord

EXPIRED_MESSAGE = "Not run: nobody decided before the approval expired."
REVOKED_MESSAGE = "Not run: the approval was revoked."


@dataclass(frozen=True, kw_only=True)
class AppliedDecisions:
    approved: dict[str, ApprovalRecord]  # by execution key, digest verified
    rejected: list[str]  # tool_call_ids (rejected, expired or revoked)
    mismatched: list[tuple[PendingCall, ApprovalRecord]]  # approved, arguments moved since
    undecided: list[PendingCall]  # still pending, or no row at all


def current_rows(rows: Iterable[ApprovalRecord]) -> dict[str, ApprovalRecord]:
    """The row that answers each call, by its execution key (`row_for` finds a call's):
    its open (non-revoked) approval, of which the store keeps at most one; else its newest
    revoked one."""
    current: dict[str, ApprovalRecord] = {}
    for row in rows:
        known = current.get(row.execution_key)
        if known is None or _answers_before(row, known):
            current[row.execution_key] = row
    return current


def row_for(rows: Mapping[str, ApprovalRecord], call: PendingCall) -> ApprovalRecord | None:
    """The current row (of `current_rows`) for a pending call: by its execution key, or
    for an approval requested before keys were stored, by its tool call id."""
    row = rows.get(call.execution_key)
    if row is None:
        row = rows.get(LEGACY_KEY_PREFIX + call.tool_call_id)
    return row


def _answers_before(row: ApprovalRecord, known: ApprovalRecord) -> bool:
    if (row.status == "revoked") != (known.status == "revoked"):
        return known.status == "revoked"
    return row.created_at >= known.created_at


def apply_decisions(state: AgentRun, rows: dict[str, ApprovalRecord]) -> AppliedDecisions:
    """Apply every terminal row to its pending call in `state`; report what did not fit.

    A call the stored state already holds approved (the run stopped before it ran: a
    pause, or another call of its turn became uncertain) is given its row too, so the
    last check before it runs (ServiceJournal) reads that row as it stands now: revoked
    or expired since, it does not run. Such a call without any row is refused
    (RunStateError): nothing may run on a decision no record backs."""
    approved: dict[str, ApprovalRecord] = {}
    rejected: list[str] = []
    mismatched: list[tuple[PendingCall, ApprovalRecord]] = []
    undecided: list[PendingCall] = []
    for call in state.get_interruptions():
        if call.status != "approval":
            continue  # uncertain calls wait for `reconcile`
        row = row_for(rows, call)
        if row is None or row.status == "pending":
            undecided.append(call)
        elif row.status != "approved":
            state.reject(
                call,
                message=_model_message(row),
                approver_id=row.decider,
                reason=row.reason,
                decided_at=decided_at(row),
            )
            rejected.append(call.tool_call_id)
        elif row.tool_name != call.tool_name or not digests_equal(
            state.call_digest(call), row.arguments_digest
        ):
            mismatched.append((call, row))
        else:
            state.approve(
                call, approver_id=row.decider, reason=row.reason, decided_at=decided_at(row)
            )
            approved[call.execution_key] = row
    approved.update(_approved_before(state, rows, approved))
    return AppliedDecisions(
        approved=approved, rejected=rejected, mismatched=mismatched, undecided=undecided
    )


def _approved_before(
    state: AgentRun, rows: Mapping[str, ApprovalRecord], applied: Mapping[str, ApprovalRecord]
) -> dict[str, ApprovalRecord]:
    """The rows of calls the stored state already holds approved (see apply_decisions)."""
    found: dict[str, ApprovalRecord] = {}
    for call in state.pending_calls():
        if call.execution_key in applied or not isinstance(state.decision_for(call), ApprovedCall):
            continue
        row = row_for(rows, call)
        if row is None:
            raise RunStateError(
                f"call {call.tool_call_id} ({call.tool_name}) is approved in the stored "
                "state but has no approval record; refusing to run it"
            )
        found[call.execution_key] = row
    return found


def decided_at(row: ApprovalRecord) -> datetime | None:
    """When the decision on the call was taken: when the person decided (or revoked),
    when it expired; not when the run resumed."""
    if row.status == "revoked":
        return row.revoked_at
    if row.status == "expired":
        return row.expires_at
    return row.decided_at


def _model_message(row: ApprovalRecord) -> str | None:
    if row.status == "expired":
        return EXPIRED_MESSAGE
    if row.status == "revoked":
        return REVOKED_MESSAGE
    return row.message  # rejected: the reviewer's message (None -> the runtime's default)
