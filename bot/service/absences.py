"""Absences: an approver says they are away until a time, and who stands in for them
meanwhile (in Slack: `/approvals away until 2026-12-24 stand-in @bob`, `/approvals
back`).

While it holds, the cards that would come to them by direct message go to their
stand-in (bot.service.audience), and the stand-in may decide the calls the away person
may decide, never their own (bot.service.authority). Both are set by the person who is
away, sealed and audited in the store (`away_set`, `away_ended`): nobody can name
themselves someone's stand-in, and a row written into the database without the keys
makes nobody eligible.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.errors import InputError
from bot.policy.rules import SLACK_USER_ID
from bot.service.workflow import Workflow
from store.records import StandIn

LONGEST_ABSENCE = timedelta(days=366)


async def set_away(flow: Workflow, user: str, *, until: datetime, stand_in: str | None) -> StandIn:
    """`user` is away from now until `until`, `stand_in` deciding in their place (None:
    nobody; their direct messages are not sent meanwhile). InputError, and nothing
    changed, for a time past or more than a year ahead, or a stand-in who is no Slack
    user id or the person themselves."""
    now = flow.clock()
    if until <= now:
        raise InputError(f"{until:%Y-%m-%d %H:%M} UTC has passed; say until when you are away")
    if until > now + LONGEST_ABSENCE:
        raise InputError(
            f"an absence lasts at most {LONGEST_ABSENCE.days} days; say an earlier date"
        )
    if stand_in is not None and not SLACK_USER_ID.fullmatch(stand_in):
        raise InputError(f"{stand_in[:40]!r} is not a Slack user id; mention your stand-in")
    if stand_in == user:
        raise InputError("you cannot stand in for yourself; name someone else")
    return await flow.store.set_stand_in(user, stand_in=stand_in, until=until, via=flow.via)


async def come_back(flow: Workflow, user: str) -> StandIn | None:
    """End `user`'s absence now; None when they were not away."""
    ended = await flow.store.end_stand_in(user, actor=user, via=flow.via)
    if ended is None or ended.until <= flow.clock():
        return None  # nothing held any more (an absence past its end, closed for tidiness)
    return ended
