"""Records of reaching approvers: stand-ins, escalation steps and direct-message copies
of cards (store.records re-exports them all)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # annotations only: store.records imports this module to re-export it
    from store.records import ApprovalRecord, SealCheck


@dataclass(frozen=True, kw_only=True)
class StandIn:
    """`away_user` is away from `created_at` until `until` (or `ended_at`, if it ended
    early); `stand_in` decides and gets direct messages in their place (None: nobody)."""

    away_user: str
    stand_in: str | None
    created_at: datetime
    until: datetime
    ended_at: datetime | None = None
    ended_by: str | None = None
    seal: SealCheck = "missing"  # only a valid seal makes the stand-in eligible

    def covers(self, at: datetime) -> bool:
        """Whether the absence held at `at`."""
        end = self.until if self.ended_at is None else min(self.until, self.ended_at)
        return self.created_at <= at < end


@dataclass(frozen=True, kw_only=True)
class EscalationPlan:
    """One escalation step of a new approval: from `due_at` on, `approvers` may decide."""

    step: int
    due_at: datetime
    approvers: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Escalation:
    """An approval's escalation step as stored; `fired_at` when the sweeper told people
    (`outcome` "escalated") or found the approval closed ("skipped")."""

    approval_id: str
    step: int
    due_at: datetime
    approvers: tuple[str, ...]
    fired_at: datetime | None = None
    outcome: Literal["escalated", "skipped"] | None = None
    seal: SealCheck = "missing"  # only a valid seal widens who may decide

    def in_force(self, at: datetime) -> bool:
        """Whether the step's people may decide at `at` (its seal verifies, its time came)."""
        return self.seal == "valid" and self.due_at <= at


@dataclass(frozen=True, kw_only=True)
class FiredEscalation:
    """A step the sweeper fired: the approval as it was then, and the step."""

    approval: ApprovalRecord
    escalation: Escalation


@dataclass(frozen=True, kw_only=True)
class NewCopy:
    """A direct-message copy of a card to plan: who gets it, for whom they stand in (if
    it comes to them as a stand-in), and at which escalation step (0: the request)."""

    recipient: str
    stands_in_for: str | None = None
    step: int = 0


@dataclass(frozen=True, kw_only=True)
class ApprovalCopy:
    """A card's copy in `recipient`'s direct messages: `channel` and `ts` once posted."""

    approval_id: str
    recipient: str
    stands_in_for: str | None
    step: int
    planned_at: datetime
    attempts: int = 0
    channel: str | None = None
    ts: str | None = None
    posted_at: datetime | None = None

    @property
    def posted(self) -> bool:
        return self.channel is not None and self.ts is not None
