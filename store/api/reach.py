"""Who is asked, and where: approvers away and who stands in for them, an approval's
escalation steps, and copies of review cards in people's direct messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from store.records import ApprovalCopy, Escalation, FiredEscalation, NewCopy, StandIn


class StandInStore(Protocol):
    """Absences: an approver away until a time, and who stands in for them (sealed)."""

    async def set_stand_in(
        self, away_user: str, *, stand_in: str | None, until: datetime, via: str | None = None
    ) -> StandIn:
        """`away_user` is away from now until `until`, `stand_in` deciding in their place
        (None: nobody); an absence still open ends first. Sealed, audited `away_set`.
        InputError when `until` has passed or someone would stand in for themselves."""
        ...

    async def end_stand_in(
        self, away_user: str, *, actor: str, via: str | None = None
    ) -> StandIn | None:
        """End the person's open absence now (audited `away_ended`); None when there is
        none."""
        ...

    async def stand_ins_of(self, users: Sequence[str], *, at: datetime) -> dict[str, StandIn]:
        """The absence of each of `users` that holds at `at`, by person (those away only);
        each says what its seal showed."""
        ...

    async def standing_in_for(self, stand_in: str, *, at: datetime) -> list[StandIn]:
        """The absences in which `stand_in` stands in for someone at `at`."""
        ...


class EscalationStore(Protocol):
    """An approval's escalation steps: written (and sealed) with the request
    (`NewApproval.escalations`), fired once by the sweeper."""

    async def escalations(self, approval_id: str) -> list[Escalation]:
        """The approval's steps in order, each saying what its seal showed."""
        ...

    async def fire_escalations(self, *, now: datetime, batch: int = 100) -> list[FiredEscalation]:
        """Mark the steps due at `now` fired, each once: those of pending approvals
        `escalated` (audited; returned with the approval), those of closed ones `skipped`.
        In batches, skipping rows another transaction holds (another replica's sweep, a
        decision being recorded), as `expire_due`."""
        ...


class CopyStore(Protocol):
    """Copies of review cards in people's direct messages."""

    async def plan_copies(
        self, approval_id: str, copies: Sequence[NewCopy], *, claim_until: datetime
    ) -> list[ApprovalCopy]:
        """Plan a copy per person (one per approval and person, ever); returns the ones
        this call planned, held by the caller until `claim_until` (the others existed)."""
        ...

    async def copy_posted(self, approval_id: str, recipient: str, *, channel: str, ts: str) -> None:
        """The copy was posted there (a decision updates it). InputError if unplanned."""
        ...

    async def claim_unsent_copies(
        self,
        *,
        now: datetime,
        claim_until: datetime,
        max_attempts: int,
        batch: int = 100,
    ) -> list[ApprovalCopy]:
        """Copies of pending approvals not posted yet whose claim ran out, tried fewer
        than `max_attempts` times: claimed until `claim_until` (one more attempt each),
        skipping rows another transaction holds."""
        ...

    async def approval_copies(self, approval_id: str) -> list[ApprovalCopy]:
        """Every copy of the approval's card, planned or posted."""
        ...
