"""Who else may decide a call, and what that rests on: the people of its escalation
steps in force, and the stand-ins of approvers who are away.

Only what a valid seal vouches for counts (store.seals): an escalation step fixed with
the request, an absence set by the person who is away. The rule that applies them, and
the channel scope over them, is bot.service.authority's (`eligibility`); this module
only reads the records and says which one widens.
"""

from __future__ import annotations

from datetime import datetime

from bot.policy.eligibility import Eligible, in_any
from bot.policy.rules import ToolRule
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, StandIn


async def by_escalation(
    flow: Workflow, approval: ApprovalRecord, rule: ToolRule, user: str, at: datetime
) -> Eligible | None:
    """Eligible through the first of the approval's escalation steps in force at `at`
    that names `user` (directly or by a user group), or None."""
    if not rule.routing.escalation:
        return None  # nothing to read: the tool never escalates
    for step in await flow.store.escalations(approval.approval_id):
        if step.in_force(at):
            named = await in_any(step.approvers, user, flow.groups)
            if named is not None:
                return Eligible(via=f"escalation step {step.step} ({named})")
    return None


async def escalated_to(
    flow: Workflow, approval: ApprovalRecord, rule: ToolRule, at: datetime
) -> tuple[str, ...]:
    """The people (user ids, groups) of the approval's escalation steps in force at
    `at`, the latest step's first, each once: who, beside its approvers, may decide it."""
    if not rule.routing.escalation:
        return ()
    steps = await flow.store.escalations(approval.approval_id)
    in_force = sorted((s for s in steps if s.in_force(at)), key=lambda s: s.step, reverse=True)
    return tuple(dict.fromkeys(person for step in in_force for person in step.approvers))


async def absences_covered(flow: Workflow, stand_in: str, at: datetime) -> list[StandIn]:
    """The absences, sealed, in which `stand_in` stood in for someone at `at`."""
    found = await flow.store.standing_in_for(stand_in, at=at)
    return [absence for absence in found if absence.seal == "valid"]


async def away_now(flow: Workflow, people: list[str]) -> dict[str, StandIn]:
    """The sealed absences of `people` now, by person (a forged one changes nothing:
    its person still counts as present)."""
    found = await flow.store.stand_ins_of(people, at=flow.clock())
    return {user: absence for user, absence in found.items() if absence.seal == "valid"}
