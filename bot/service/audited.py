"""Audit-only tools: the tool runs without waiting, and a card records what ran.

A tool whose rule has `mode = "audit"` (default "approve") is one a team wants watched
but not blocked. Its calls pause as every gated call does (every engine, one path), get
their own approval row, digest and sealed request, and are approved at once by the
policy itself: a vote of AUDIT_VOTER (`via: audit`), sealed like any vote. The run is
resumed in the same step, so nobody is asked and nothing waits for a person. No card is
posted before the call runs (nobody could stop it); once it ran, its card is posted in
the run's thread with its result, redacted and escaped like every card (the visible-
character rule included), and audited `executed` as any call.

The last check before the call runs holds as for any approved call (digest, seal,
expiry, cancellation); a vote of AUDIT_VOTER counts there only while the tool's rule is
still audit-only: a tool switched back to "approve" in between is not run on it
(`execution_refused`), so a policy change takes effect at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.credentials import redact_text
from bot.errors import ApprovalsError
from bot.service.events import AuditedCallRan
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, RunRecord

log = logging.getLogger(__name__)

AUDIT_VOTER = "policy:audit-only"
"""Who approves an audit-only call: the policy (never a Slack user id)."""
AUDIT_VIA = "audit"
AUDIT_REASON = 'audit-only tool (policy mode = "audit"): ran without waiting, recorded here'
MAX_RESULT_CHARS = 2000


def audit_only(flow: Workflow, tool_name: str) -> bool:
    return flow.rule_for(tool_name).mode == "audit"


async def wave_through(flow: Workflow, records: Sequence[ApprovalRecord]) -> bool:
    """Approve the pending `records` of audit-only tools in the policy's name; True when
    at least one was decided (the caller then resumes the run if nothing is open)."""
    decided = False
    for record in records:
        if record.status != "pending" or not audit_only(flow, record.tool_name):
            continue
        outcome = await flow.store.vote(
            record.approval_id,
            decision="approved",
            voter=AUDIT_VOTER,
            digest=record.arguments_digest,
            reason=AUDIT_REASON,
            now=flow.clock(),
            via=AUDIT_VIA,
        )
        if outcome.result == "decided":
            flow.telemetry.approval_closed(outcome.record)
            decided = True
    return decided


def audit_vote_refusal(flow: Workflow, approval: ApprovalRecord) -> str | None:
    """Why a vote of AUDIT_VOTER may not count for the approval now (None: it may)."""
    if audit_only(flow, approval.tool_name):
        return None
    return f"{approval.tool_name} is no longer audit-only: a person must approve it"


async def record_ran(
    flow: Workflow, run: RunRecord, approval: ApprovalRecord, result: str, is_error: bool
) -> None:
    """After an audit-only call ran: its card, with its result, in the run's thread.
    Never raises: a failure to post or to keep where it went is logged (the call ran and
    its result is recorded; the run goes on)."""
    if approval.decider != AUDIT_VOTER:
        return
    shown = redact_text(result)
    if len(shown) > MAX_RESULT_CHARS:
        shown = shown[:MAX_RESULT_CHARS]
    location = await flow.notify(
        AuditedCallRan(run=run, approval=approval, result=shown, is_error=is_error)
    )
    if location is None:
        return
    channel, ts = location
    try:
        await flow.store.set_approval_message(approval.approval_id, channel=channel, ts=ts)
    except ApprovalsError as error:  # the card is posted; the run must go on regardless
        log.warning("could not keep where the card of %s went: %s", approval.approval_id, error)
