"""Votes: N-of-M quorum, one write transaction per vote.

`vote` reads the approval, checks it is pending, unexpired and on the digest the voter
saw, applies an amendment (approve-with-changes: new digest and snapshot; votes on the
old digest stop counting, and earlier votes on the new one are dropped), inserts the
vote (the primary key (approval, voter, digest) makes a second vote by the same person
on the same arguments a no-op), and makes the transition when the vote completes the
quorum or rejects. It all runs in one `BEGIN IMMEDIATE` transaction on the writer
thread and every update is conditional on `status = 'pending'`, so of two racing final
votes exactly one makes the transition. A vote that does not close the approval is
audited `voted`; the closing one is the `decided` event, which lists every counted voter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import cast

from bot.errors import InputError
from store.api import (
    Amendment,
    ApprovalRecord,
    Decision,
    VoteOutcome,
    VoteRecord,
    VoteResult,
)
from store.sqlite import audit
from store.sqlite.approvals import DECISIONS, EXPIRE_ONE, SELECT_ONE, audit_expired
from store.sqlite.base import StoreBase
from store.sqlite.connection import fetch_all, fetch_one
from store.sqlite.rows import APPROVAL_COLUMNS, row_to_approval
from store.sqlite.timefmt import from_db, to_db

VOTE_COLUMNS = "approval_id, voter, decision, digest, reason, at"


def row_to_vote(row: sqlite3.Row) -> VoteRecord:
    return VoteRecord(
        approval_id=row["approval_id"],
        voter=row["voter"],
        decision=cast(Decision, row["decision"]),
        digest=row["digest"],
        reason=row["reason"],
        at=from_db(row["at"]),
    )


class VotesPart(StoreBase):
    async def vote(
        self,
        approval_id: str,
        *,
        decision: Decision,
        voter: str,
        digest: str,
        reason: str | None,
        message: str | None = None,
        amend: Amendment | None = None,
        now: datetime | None = None,
    ) -> VoteOutcome:
        if decision not in DECISIONS:
            raise InputError(f"decision {decision!r} is not one of {sorted(DECISIONS)}")
        if not voter:
            raise InputError("a vote needs a voter")
        if amend is not None and decision != "approved":
            raise InputError("only an approval can change the arguments")
        at = now or self._now()
        ballot = _Ballot(
            approval_id=approval_id,
            decision=decision,
            voter=voter,
            digest=digest,
            reason=reason,
            message=message,
            at=at,
            amend=amend,
        )
        return await self._db.transaction(ballot.cast_in)

    async def votes(self, approval_ids: Sequence[str]) -> dict[str, list[VoteRecord]]:
        found: dict[str, list[VoteRecord]] = {approval_id: [] for approval_id in approval_ids}
        for start in range(0, len(approval_ids), 500):
            chunk = list(approval_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            rows = await self._db.read(
                f"SELECT {VOTE_COLUMNS} FROM approval_votes WHERE approval_id IN ({marks}) "
                "ORDER BY at, voter",
                chunk,
            )
            for row in rows:
                found[row["approval_id"]].append(row_to_vote(row))
        return found

    async def claim_reminders(self, *, now: datetime) -> list[ApprovalRecord]:
        at = to_db(now)

        def body(connection: sqlite3.Connection) -> list[ApprovalRecord]:
            rows = fetch_all(
                connection,
                "UPDATE approvals SET reminded_at = ? WHERE status = 'pending' "
                "AND reminded_at IS NULL AND remind_at IS NOT NULL AND remind_at <= ? "
                "AND (expires_at IS NULL OR expires_at > ?) "
                f"RETURNING {APPROVAL_COLUMNS}",
                (at, at, at),
            )
            claimed = sorted((row_to_approval(r) for r in rows), key=lambda r: r.approval_id)
            for record in claimed:
                audit.append(
                    connection,
                    "reminded",
                    at=now,
                    actor="store",
                    run_id=record.run_id,
                    approval_id=record.approval_id,
                    detail={"expires_at": to_db(record.expires_at) if record.expires_at else None},
                )
            return claimed

        return await self._db.transaction(body)


class _Ballot:
    """One vote's transaction body (runs on the writer thread)."""

    def __init__(
        self,
        *,
        approval_id: str,
        decision: Decision,
        voter: str,
        digest: str,
        reason: str | None,
        message: str | None,
        at: datetime,
        amend: Amendment | None = None,
    ) -> None:
        self.approval_id = approval_id
        self.decision = decision
        self.voter = voter
        self.digest = digest
        self.reason = reason
        self.message = message
        self.at = at
        self.at_text = to_db(at)
        self.amend = amend

    def cast_in(self, connection: sqlite3.Connection) -> VoteOutcome:
        row = fetch_one(connection, SELECT_ONE, (self.approval_id,))
        if row is None:
            raise InputError(f"there is no approval with id {self.approval_id!r}")
        record = row_to_approval(row)
        if record.status != "pending":
            return self._outcome(connection, "closed", record)
        if record.expires_at is not None and record.expires_at <= self.at:
            return self._outcome(connection, "expired", self._expire(connection) or record)
        if record.arguments_digest != self.digest:
            return self._outcome(connection, "stale_digest", record)
        if self.amend is not None and self.amend.arguments_digest != record.arguments_digest:
            # An "amendment" to the arguments already under review changes nothing: it is
            # a plain approval, and must not drop the other approvers' votes.
            record = self._apply_amendment(connection, record, self.amend)
        if not self._insert_vote(connection, record.arguments_digest):
            return self._outcome(connection, "already_voted", record)
        return self._maybe_transition(connection, record)

    def _expire(self, connection: sqlite3.Connection) -> ApprovalRecord | None:
        expired = fetch_one(connection, EXPIRE_ONE, (self.approval_id, self.at_text))
        if expired is None:
            return None
        record = row_to_approval(expired)
        audit_expired(connection, record, self.at)
        return record

    def _apply_amendment(
        self, connection: sqlite3.Connection, record: ApprovalRecord, amend: Amendment
    ) -> ApprovalRecord:
        row = fetch_one(
            connection,
            "UPDATE approvals SET arguments_digest = ?, snapshot = ?, amended_by = ? "
            "WHERE approval_id = ? AND status = 'pending' AND arguments_digest = ? "
            f"RETURNING {APPROVAL_COLUMNS}",
            (
                amend.arguments_digest,
                amend.snapshot,
                self.voter,
                self.approval_id,
                record.arguments_digest,
            ),
        )
        assert row is not None  # read and checked in this same write transaction
        # Arguments changed back to ones voted on before (A -> B -> A): those votes were
        # cast before the latest change and must not count again (the audit keeps them).
        connection.execute(
            "DELETE FROM approval_votes WHERE approval_id = ? AND digest = ?",
            (self.approval_id, amend.arguments_digest),
        )
        audit.append(
            connection,
            "arguments_changed",
            at=self.at,
            actor=self.voter,
            run_id=record.run_id,
            approval_id=self.approval_id,
            detail={
                "old_digest": record.arguments_digest,
                "new_digest": amend.arguments_digest,
                "reason": self.reason,
            },
        )
        return row_to_approval(row)

    def _insert_vote(self, connection: sqlite3.Connection, digest: str) -> bool:
        inserted = fetch_one(
            connection,
            f"INSERT INTO approval_votes ({VOTE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING voter",
            (self.approval_id, self.voter, self.decision, digest, self.reason, self.at_text),
        )
        return inserted is not None

    def _maybe_transition(
        self, connection: sqlite3.Connection, record: ApprovalRecord
    ) -> VoteOutcome:
        if self.decision == "approved" and record.required_approvals == 1:
            # Any earlier vote on this digest would have closed it: this one is alone.
            votes: tuple[VoteRecord, ...] = (self._as_record(record.arguments_digest),)
        else:
            votes = _votes_on(connection, self.approval_id, record.arguments_digest)
        approvals = [vote.voter for vote in votes if vote.decision == "approved"]
        closes = self.decision == "rejected" or len(approvals) >= record.required_approvals
        if not closes:
            audit.append(
                connection,
                "voted",
                at=self.at,
                actor=self.voter,
                run_id=record.run_id,
                approval_id=self.approval_id,
                detail={
                    "decision": self.decision,
                    "digest": record.arguments_digest,
                    "reason": self.reason,
                    "approvals": len(approvals),
                    "required": record.required_approvals,
                },
            )
            return VoteOutcome(result="counted", record=record, votes=votes)
        row = fetch_one(
            connection,
            "UPDATE approvals SET status = ?, decider = ?, reason = ?, message = ?, "
            "decided_at = ? WHERE approval_id = ? AND status = 'pending' "
            f"AND arguments_digest = ? RETURNING {APPROVAL_COLUMNS}",
            (self.decision, self.voter, self.reason,
             self.message if self.decision == "rejected" else None,
             self.at_text, self.approval_id, record.arguments_digest),
        )  # fmt: skip
        assert row is not None  # pending was checked in this same write transaction
        decided = row_to_approval(row)
        audit.append(
            connection,
            "decided",
            at=self.at,
            actor=self.voter,
            run_id=decided.run_id,
            approval_id=self.approval_id,
            detail={
                "decision": self.decision,
                "reason": self.reason,
                "message": decided.message,
                "digest": decided.arguments_digest,
                "voters": approvals if self.decision == "approved" else [self.voter],
            },
        )
        return VoteOutcome(result="decided", record=decided, votes=votes)

    def _as_record(self, digest: str) -> VoteRecord:
        return VoteRecord(
            approval_id=self.approval_id,
            voter=self.voter,
            decision=self.decision,
            digest=digest,
            reason=self.reason,
            at=from_db(self.at_text),
        )

    def _outcome(
        self, connection: sqlite3.Connection, result: VoteResult, record: ApprovalRecord
    ) -> VoteOutcome:
        votes = _votes_on(connection, self.approval_id, record.arguments_digest)
        return VoteOutcome(result=result, record=record, votes=votes)


def _votes_on(
    connection: sqlite3.Connection, approval_id: str, digest: str
) -> tuple[VoteRecord, ...]:
    """The votes on one digest of the approval's arguments, in order (the primary key's
    prefix (approval_id, voter, digest) finds them without a table scan)."""
    rows = fetch_all(
        connection,
        f"SELECT {VOTE_COLUMNS} FROM approval_votes WHERE approval_id = ? AND digest = ? "
        "ORDER BY at, voter",
        (approval_id, digest),
    )
    return tuple(row_to_vote(row) for row in rows)
