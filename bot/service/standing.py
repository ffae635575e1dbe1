"""Standing decisions: "approve (or reject) this tool for the rest of the run".

Only where the policy allows it per tool (`allow_always = true`, which the policy refuses
together with `required_approvals` > 1: a standing decision is one person's). The person
decides the approval in front of them as any vote (same eligibility, reason, digest and
expiry checks; audited); once that vote decided it, the decision is recorded to stand
(`standing_set`) and applied at once to the run's other pending calls of the same tool.

A later call of the tool in the run is not waved through by the run core: it is asked
as every call is (its own approval row, digest and card), and the service votes on it
at once in the standing decider's name (`via: standing`), after checking again that the
decider is still eligible for that call (a thread reply's author may be its requester,
and the self-approval rule holds), that the policy still allows it and that the call
needs one approval. Every call it covers therefore keeps the checks of an ordinary
approval, including the last one right before it runs. (This is why the service does not
use the RunState's own `always` rules: the runner would run later calls of that tool in
the same resume with no approval row, no digest and no last check.)

A standing decision counts only while its seal verifies (store.seals; `sealed_standing`):
one a database writer inserted or copied decides nothing and is audited
`tamper_detected`.

A standing approval never covers a call its card cuts until the standing decider has
read it in full, nor a call whose snapshot did not verify (the read-all rule, applied
in one place for every decision taken ahead of a call:
bot.service.reading.why_not_approved_ahead). Such a call stays pending on its card;
once read, its decider approves it there. A standing rejection covers it: rejecting
needs no reading.

Revoking the standing decision stops it for calls not yet asked: they are asked again.
Calls it already decided keep their own approval: one that has not run yet can still be
revoked on its card; one that ran stays run (the audit shows which decision ran it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.policy.eligibility import Eligible
from bot.service.authority import eligibility, why_not_stand
from bot.service.events import ApprovalDecided
from bot.service.reading import why_not_approved_ahead
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, RunRecord, StandingDecision

log = logging.getLogger(__name__)

STANDING_VIA = "standing"


def standing_reason(decision: StandingDecision) -> str:
    """The reason a vote made by a standing decision records."""
    why = f": {decision.reason}" if decision.reason else ""
    return f"standing decision of approval {decision.approval_id}{why}"


async def apply_standing(flow: Workflow, run: RunRecord, records: Sequence[ApprovalRecord]) -> bool:
    """Vote on the new pending `records` that a standing decision of the run covers; True
    when at least one was decided (the caller then resumes the run if nothing is open)."""
    pending = [record for record in records if record.status == "pending"]
    if not pending:
        return False
    standing = {d.tool_name: d for d in await sealed_standing(flow, run)}
    decided = False
    for tool_name, decision in standing.items():
        covered = [record for record in pending if record.tool_name == tool_name]
        decided = await apply_decision(flow, run, covered, decision) or decided
    return decided


async def sealed_standing(flow: Workflow, run: RunRecord) -> list[StandingDecision]:
    """The run's active standing decisions whose seals verify. One that does not (set in
    the database without the keys, or copied from another run) decides nothing: it is
    audited `tamper_detected`, logged and counted (the telemetry's `decision_tampered`)."""
    sealed = []
    for decision in await flow.store.standing_decisions(run.run_id):
        if decision.seal == "valid":
            sealed.append(decision)
            continue
        await flow.record_tampering(
            run_id=run.run_id, approval_id=decision.approval_id, purpose="standing_seal",
            why=f"the standing decision's seal is {decision.seal}",
        )  # fmt: skip
    return sealed


async def apply_decision(
    flow: Workflow, run: RunRecord, records: Sequence[ApprovalRecord], decision: StandingDecision
) -> bool:
    """Vote on each of `records` in the standing decider's name, where the decision may
    still decide it; True when at least one was decided."""
    decided = False
    for record in records:
        why_not = await _why_not(flow, record, decision)
        if why_not is not None:
            log.info("standing decision %s not applied to %s: %s",
                     decision.approval_id, record.approval_id, why_not)  # fmt: skip
            continue
        outcome = await flow.store.vote(
            record.approval_id,
            decision=decision.decision,
            voter=decision.decider,
            digest=record.arguments_digest,
            reason=standing_reason(decision),
            message=decision.message if decision.decision == "rejected" else None,
            now=flow.clock(),
            via=STANDING_VIA,
        )
        if outcome.result == "decided":
            decided = True
            flow.telemetry.approval_closed(outcome.record)
            standing = await flow.standing(run.run_id)
            await flow.notify(ApprovalDecided(run=run, approval=outcome.record, standing=standing))
    return decided


async def _why_not(
    flow: Workflow, record: ApprovalRecord, decision: StandingDecision
) -> str | None:
    """Why the standing decision may not decide this call now (None: it may)."""
    if decision.seal != "valid":
        return f"its seal is {decision.seal}"
    why_not = why_not_stand(flow.rule_for(record.tool_name), record)
    if why_not is not None:
        return why_not
    verdict = await eligibility(flow, record, decision.decider)
    if not isinstance(verdict, Eligible):
        return f"{decision.decider} may not decide it ({verdict.code})"
    if decision.decision == "approved":
        return await why_not_approved_ahead(flow, record, decision.decider)
    return None
