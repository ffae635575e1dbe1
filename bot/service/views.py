"""Read models for the people layer: an approval as a viewer sees it, and pages of them.

The Slack layer renders cards, `/approvals` replies and App Home from these and never
reads the store itself: what a viewer may do (decide, revoke, reconcile) is decided
here, by the policy, once.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from bot.errors import InputError
from store.api import ApprovalRecord, PendingCursor, VoteRecord

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ApprovalView:
    """One approval for one viewer.

    `votes` are the votes on the current arguments digest (older ones no longer count);
    `approvals_count` of `required` distinct approvals are in (the card's "1 of 2
    approvals"), given by `voters`. `approvers` are the policy's ids for the tool (users
    U…/W…, groups S…; empty: anyone but the requester unless self approval is allowed).
    `can_decide`/`can_revoke`/`can_reconcile` say what the viewer may do now;
    `why_not` says why the viewer may not decide (None when they may)."""

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


@dataclass(frozen=True, kw_only=True)
class Page(Generic[T]):
    """One page of a list; pass `next_cursor` back for the next (None: the last page)."""

    items: tuple[T, ...]
    next_cursor: str | None


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
