"""Who gets a copy of a card by direct message: the people a rule names (user ids, and
the members of user groups, read from Slack), each only if they may decide the call by
the same rules as a click (bot.service.authority: the policy, the call's channel, never
the requester), an away person's stand-in in their place, at most `max_dms` of them.

A direct message must not show a call to someone who could not see it in its channel,
so every recipient passes `eligibility`, which is scoped to the members of the call's
channel. Someone away with a stand-in is replaced by the stand-in (who must pass the
same check, as the stand-in); someone away without one gets nothing. People are taken
in the order the rule names them; a user group whose members would take the count past
`max_dms` is left out whole, and so is a person past it: the ones left out are mentioned
in the run's thread instead (`Audience.mentioned`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.policy.eligibility import Eligible
from bot.policy.rules import SLACK_GROUP_ID
from bot.service.authority import eligibility
from bot.service.widening import away_now
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, NewCopy, StandIn


@dataclass(kw_only=True)
class Audience:
    """The copies to send, and who is mentioned in the thread instead."""

    copies: list[NewCopy] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)


async def audience(
    flow: Workflow, approval: ApprovalRecord, named: Sequence[str], *, step: int = 0
) -> Audience:
    """The copies of the approval's card for the people `named` (the rule's approvers,
    or an escalation step's people: `step`), within the rule's `max_dms`."""
    limit = flow.rule_for(approval.tool_name).routing.max_dms
    groups = {who: sorted(await flow.groups.members(who)) for who in named if _is_group(who)}
    people = [person for who in named for person in groups.get(who, [who])]
    absent = await away_now(flow, people)
    found = Audience()
    taken: set[str] = set()
    for who in named:
        copies = [
            copy
            for person in groups.get(who, [who])
            if (copy := await _copy_for(flow, approval, person, absent, step)) is not None
        ]
        fresh = list({c.recipient: c for c in copies if c.recipient not in taken}.values())
        if len(found.copies) + len(fresh) > limit:
            found.mentioned.append(who)
            continue
        found.copies += fresh
        taken.update(copy.recipient for copy in fresh)
    return found


async def _copy_for(
    flow: Workflow,
    approval: ApprovalRecord,
    person: str,
    absent: dict[str, StandIn],
    step: int,
) -> NewCopy | None:
    """The copy `person` gets (or their stand-in gets for them), if any."""
    absence = absent.get(person)
    if absence is not None:
        if absence.stand_in is None:
            return None
        verdict = await eligibility(flow, approval, absence.stand_in)
        if not isinstance(verdict, Eligible):
            return None
        return NewCopy(recipient=absence.stand_in, stands_in_for=person, step=step)
    verdict = await eligibility(flow, approval, person)
    return NewCopy(recipient=person, step=step) if isinstance(verdict, Eligible) else None


def _is_group(who: str) -> bool:
    return SLACK_GROUP_ID.fullmatch(who) is not None
