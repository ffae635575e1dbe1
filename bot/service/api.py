"""What the service shows the layer above of an approval: its read models.

As `store.records` does for the store, this module holds the records people are shown
(`ApprovalView`: one approval for one viewer, and what they may do to it; `Page`: one
page of a list; `UncertainCall`), the opaque page cursor, and whom a service serves
(`Surface`). The notifier and its events are bot.service.events; what the operations
answer is bot.service.answers; the read models are built for a viewer by
bot.service.views.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, Literal, TypeVar

from bot.errors import InputError
from bot.runtime import PendingCall
from store.records import ApprovalRecord, PendingCursor, StandingDecision, VoteRecord

T = TypeVar("T")

Surface = Literal["slack", "terminal", "cli"]
"""Whom a service serves: the Slack bot, the terminal demo, or operators at the CLI.
Runs remember where they were started (`RunRecord.origin`): the bot and the demo each
show and decide only their own runs; operators reach every run. Every decision records
the surface it came through (audit detail `via`)."""

ViewerAction = Literal["decide", "revoke", "reconcile"]
"""What a viewer may do to an approval (`ApprovalView.allowed_actions`)."""

# -- read models ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ApprovalView:
    """One approval for one viewer.

    `votes` are the votes on the current arguments digest (older ones no longer count);
    `approvals_count` of `required` distinct approvals are in (the card's "1 of 2
    approvals"), given by `voters`. `approvers` are the policy's ids for the tool (users
    U…/W…, groups S…; empty: anyone but the requester unless self approval is allowed).
    `can_decide`/`can_revoke`/`can_reconcile` say what the viewer may do now (the rules
    of bot.service.authority); `why_not` says why the viewer may not decide (None when
    they may). `must_read`: the card cuts the arguments, so an approval counts only
    from someone who read them whole (bot.service.reading); `has_read`: the viewer has,
    for the current digest. `waited_seconds`: how long it has waited for people, until
    now while pending, else until it closed (bot.service.waiting)."""

    approval: ApprovalRecord
    votes: tuple[VoteRecord, ...]
    approvals_count: int
    required: int
    voters: tuple[str, ...]
    approvers: tuple[str, ...]
    can_decide: bool
    can_revoke: bool
    can_reconcile: bool
    why_not: str | None
    must_read: bool = False
    has_read: bool = False
    can_stand: bool = False  # the viewer may decide it for the rest of the run (policy)
    window: WindowOffer | None = None  # the window the viewer's approval may open (policy)
    standing: StandingDecision | None = None  # the active standing decision it made
    waited_seconds: float = 0.0

    def allowed_actions(self) -> tuple[ViewerAction, ...]:
        """What the viewer may do to the approval now, in the order people are told."""
        allowed: tuple[tuple[ViewerAction, bool], ...] = (
            ("decide", self.can_decide),
            ("revoke", self.can_revoke),
            ("reconcile", self.can_reconcile),
        )
        return tuple(action for action, may in allowed if may)


@dataclass(frozen=True, kw_only=True)
class WindowOffer:
    """The approval window an approval of a call may open (bot.service.windows): for
    `lasts`, over later calls of its tool whose `match_fields` arguments are equal (none
    named: every call of the tool)."""

    lasts: timedelta
    match_fields: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Page(Generic[T]):
    """One page of a list; pass `next_cursor` back for the next (None: the last page)."""

    items: tuple[T, ...]
    next_cursor: str | None


@dataclass(frozen=True, kw_only=True)
class UncertainCall:
    """A call whose outcome is unknown, as people see it before they reconcile it (its
    arguments stay in the sealed state)."""

    run_id: str
    tool_call_id: str
    tool_name: str
    execution_key: str

    @classmethod
    def of(cls, run_id: str, call: PendingCall) -> UncertainCall:
        return cls(
            run_id=run_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            execution_key=call.execution_key,
        )


def encode_cursor(cursor: PendingCursor) -> str:
    created_at, approval_id = cursor
    raw = f"{created_at.isoformat()}|{approval_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> PendingCursor:
    """An opaque cursor from `Page.next_cursor`; InputError for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        created_at, approval_id = raw.split("|", 1)
        moment = datetime.fromisoformat(created_at)
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{text!r} is not a page cursor from this bot") from None
    if moment.tzinfo is None or not approval_id:
        raise InputError(f"{text!r} is not a page cursor from this bot")
    return moment, approval_id
