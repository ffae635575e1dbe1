"""Votes: N-of-M quorum, one write transaction per vote (who has read an approval's
arguments in full before voting is store.sql.full_reads).

`vote` reads the approval, checks it is pending, unexpired and on the digest the voter
saw, applies an amendment (approve-with-changes: new digest and snapshot; votes on the
old digest stop counting, and earlier votes on the new one are dropped), inserts the
vote (the primary key (approval, voter, digest) makes a second vote by the same person
on the same arguments a no-op), asks the quorum rule (`tally`, store.sql.quorum) and makes
the transition it names. It all runs in one write transaction that reads the approval
`FOR UPDATE` (on SQLite the writer holds the whole database), and every update is
conditional on `status = 'pending'`, so of two racing final votes exactly one makes the
transition. A vote that does not close the approval is
audited `voted`; the closing one is the `decided` event, which lists every counted voter.

The vote people cast most, an approval that closes an approval needing one, is first
tried as one statement (store.sql.closing): the conditional UPDATE that closes the
approval, with the vote and the `decided` event inserted for the row it changed (on
Postgres one round trip, no BEGIN or COMMIT). It changes a row only in the one case where
the whole transaction would have ended the same way; every other vote matches nothing
there and takes the transaction.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import Amendment, ApprovalRecord, Verdict, VoteOutcome, VoteRecord, VoteResult
from store.rows import (
    APPROVAL_COLUMNS,
    VOTE_COLUMNS,
    from_db,
    row_to_vote,
    to_db,
)
from store.seals import (
    SEAL_COLUMNS,
    VOTE_PURPOSE,
    DecisionSeals,
    Seal,
    read_approval,
    seal_params,
    seal_snapshot,
    vote_fields,
)
from store.sql import audit
from store.sql.approvals import SELECT_ONE
from store.sql.closing import closed_alone, closing_alone
from store.sql.expiry import expire_one
from store.sql.quorum import Tally, check_vote, tally
from store.tx import (
    Body,
    Database,
    many,
    one,
    placeholders,
    run,
)

IN_CLAUSE_CHUNK = 500  # far below SQLite's and Postgres's limits on parameters
LOCK_ONE = f"{SELECT_ONE} FOR UPDATE"


class Votes:
    """The VoteStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def vote(
        self,
        approval_id: str,
        *,
        decision: Verdict,
        voter: str,
        digest: str,
        reason: str | None,
        message: str | None = None,
        amend: Amendment | None = None,
        now: datetime | None = None,
        via: str | None = None,
    ) -> VoteOutcome:
        check_vote(decision, voter=voter, amend=amend)
        at = now or self._clock()
        at_text = to_db(at)
        seal = self._seals.seal(
            VOTE_PURPOSE,
            vote_fields(
                approval_id=approval_id, voter=voter, decision=decision,
                digest=digest if amend is None else amend.arguments_digest, at=at_text,
            ),
        )  # fmt: skip
        if decision == "approved" and amend is None:
            closed = await self._db.transact_one(
                closing_alone(
                    approval_id=approval_id, voter=voter, digest=digest, reason=reason,
                    at_text=at_text, via=via, seal=seal,
                )
            )  # fmt: skip
            if closed is not None:
                return closed_alone(
                    self._seals, closed, voter=voter, reason=reason, at_text=at_text
                )
        ballot = _Ballot(
            approval_id=approval_id,
            decision=decision,
            voter=voter,
            digest=digest,
            reason=reason,
            message=message,
            at=at,
            at_text=at_text,
            amend=amend,
            via=via,
            seal=seal,
            seals=self._seals,
            snapshot_seal=None
            if amend is None
            else seal_snapshot(
                self._seals,
                approval_id=approval_id,
                arguments_digest=amend.arguments_digest,
                snapshot=amend.snapshot,
            ),
        )
        return await self._db.transact(ballot.cast_in)

    async def votes(self, approval_ids: Sequence[str]) -> dict[str, list[VoteRecord]]:
        found: dict[str, list[VoteRecord]] = {approval_id: [] for approval_id in approval_ids}
        for start in range(0, len(approval_ids), IN_CLAUSE_CHUNK):
            chunk = list(approval_ids[start : start + IN_CLAUSE_CHUNK])
            marks = placeholders(len(chunk))
            rows = await self._db.read(
                f"SELECT {VOTE_COLUMNS} FROM approval_votes WHERE approval_id IN ({marks}) "
                "ORDER BY at, voter",
                chunk,
            )
            for row in rows:
                found[row["approval_id"]].append(row_to_vote(row))
        return found


@dataclass(kw_only=True, slots=True)  # not frozen: built on every vote, frozen costs 2x
class _Ballot:
    """One vote's transaction body."""

    approval_id: str
    decision: Verdict
    voter: str
    digest: str
    reason: str | None
    message: str | None
    at: datetime
    at_text: str
    amend: Amendment | None
    via: str | None
    seal: Seal  # the vote's seal (store.seals.vote_fields), made before the transaction
    seals: DecisionSeals  # checks the snapshot of every approval row it reads
    snapshot_seal: Seal | None  # the amendment's new snapshot's seal, made beforehand

    def cast_in(self) -> Body[VoteOutcome]:
        row = yield one(LOCK_ONE, (self.approval_id,))
        if row is None:
            raise InputError(f"there is no approval with id {self.approval_id!r}")
        record = read_approval(self.seals, row)
        if record.status != "pending":
            return (yield from self._outcome("closed", record))
        if record.expires_at is not None and record.expires_at <= self.at:
            expired = yield from expire_one(self.seals, self.approval_id, self.at)
            return (yield from self._outcome("expired", expired or record))
        if not _same(record.arguments_digest, self.digest):
            return (yield from self._outcome("stale_digest", record))
        if self.amend is not None and not _same(
            self.amend.arguments_digest, record.arguments_digest
        ):
            # An "amendment" to the arguments already under review changes nothing: it is
            # a plain approval, and must not drop the other approvers' votes.
            record = yield from self._apply_amendment(record, self.amend)
        if not (yield from self._insert_vote(record.arguments_digest)):
            return (yield from self._outcome("already_voted", record))
        return (yield from self._count(record))

    def _apply_amendment(self, record: ApprovalRecord, amend: Amendment) -> Body[ApprovalRecord]:
        row = yield one(
            "UPDATE approvals SET arguments_digest = ?, snapshot = ?, amended_by = ?, "
            "snapshot_seal_key_id = ?, snapshot_seal = ? "
            "WHERE approval_id = ? AND status = 'pending' AND arguments_digest = ? "
            f"RETURNING {APPROVAL_COLUMNS}",
            (amend.arguments_digest, amend.snapshot, self.voter,
             *seal_params(self.snapshot_seal), self.approval_id, record.arguments_digest),
        )  # fmt: skip
        assert row is not None  # read and checked in this same write transaction
        # Arguments changed back to ones voted on before (A -> B -> A): those votes were
        # cast before the latest change and must not count again (the audit keeps them).
        yield run(
            "DELETE FROM approval_votes WHERE approval_id = ? AND digest = ?",
            (self.approval_id, amend.arguments_digest),
        )
        yield from audit.append(
            "arguments_changed",
            at=self.at,
            actor=self.voter,
            run_id=record.run_id,
            approval_id=self.approval_id,
            detail=with_via(
                {
                    "old_digest": record.arguments_digest,
                    "new_digest": amend.arguments_digest,
                    "reason": self.reason,
                },
                self.via,
            ),
        )
        return read_approval(self.seals, row)

    def _insert_vote(self, digest: str) -> Body[bool]:
        inserted = yield one(
            f"INSERT INTO approval_votes ({VOTE_COLUMNS}, {SEAL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING voter",
            (self.approval_id, self.voter, self.decision, digest, self.reason, self.at_text,
             *seal_params(self.seal)),
        )  # fmt: skip
        return inserted is not None

    def _count(self, record: ApprovalRecord) -> Body[VoteOutcome]:
        """Tally the votes on the current digest; close the approval if they decide it."""
        digest = record.arguments_digest
        if self.decision == "approved" and record.required_approvals == 1:
            # A quorum of one closes on the first vote on a digest: this one is alone.
            votes: tuple[VoteRecord, ...] = (self._as_record(digest),)
        else:
            votes = yield from _votes_on(self.approval_id, digest)
        counted = tally(votes, required=record.required_approvals, digest=digest)
        if counted.verdict is None:
            yield from self._audit_counted(record, counted)
            return VoteOutcome(result="counted", record=record, votes=votes)
        decided = yield from self._close(record, counted)
        return VoteOutcome(result="decided", record=decided, votes=votes)

    def _audit_counted(self, record: ApprovalRecord, counted: Tally) -> Body[None]:
        yield from audit.append(
            "voted",
            at=self.at,
            actor=self.voter,
            run_id=record.run_id,
            approval_id=self.approval_id,
            detail=with_via(
                {
                    "decision": self.decision,
                    "digest": record.arguments_digest,
                    "reason": self.reason,
                    "approvals": len(counted.approvers),
                    "required": record.required_approvals,
                },
                self.via,
            ),
        )

    def _close(self, record: ApprovalRecord, counted: Tally) -> Body[ApprovalRecord]:
        verdict = counted.verdict
        row = yield one(
            "UPDATE approvals SET status = ?, decider = ?, reason = ?, message = ?, "
            "decided_at = ? WHERE approval_id = ? AND status = 'pending' "
            f"AND arguments_digest = ? RETURNING {APPROVAL_COLUMNS}",
            (verdict, self.voter, self.reason,
             self.message if verdict == "rejected" else None,
             self.at_text, self.approval_id, record.arguments_digest),
        )  # fmt: skip
        assert row is not None  # pending was checked in this same write transaction
        decided = read_approval(self.seals, row)
        yield from audit.append(
            "decided",
            at=self.at,
            actor=self.voter,
            run_id=decided.run_id,
            approval_id=self.approval_id,
            detail=with_via(
                {
                    "decision": verdict,
                    "reason": self.reason,
                    "message": decided.message,
                    "digest": decided.arguments_digest,
                    "voters": list(
                        counted.approvers if verdict == "approved" else counted.rejecters
                    ),
                },
                self.via,
            ),
        )
        return decided

    def _as_record(self, digest: str) -> VoteRecord:
        return VoteRecord(
            approval_id=self.approval_id,
            voter=self.voter,
            decision=self.decision,
            digest=digest,
            reason=self.reason,
            at=from_db(self.at_text),  # as it reads back from the row
        )

    def _outcome(self, result: VoteResult, record: ApprovalRecord) -> Body[VoteOutcome]:
        votes = yield from _votes_on(self.approval_id, record.arguments_digest)
        return VoteOutcome(result=result, record=record, votes=votes)


def _votes_on(approval_id: str, digest: str) -> Body[tuple[VoteRecord, ...]]:
    """The votes on one digest of the approval's arguments, in order (the primary key's
    prefix (approval_id, voter, digest) finds them without a table scan)."""
    rows = yield many(
        f"SELECT {VOTE_COLUMNS} FROM approval_votes WHERE approval_id = ? AND digest = ? "
        "ORDER BY at, voter",
        (approval_id, digest),
    )
    return tuple(row_to_vote(row) for row in rows)


def _same(first: str, second: str) -> bool:
    """Digests compared in constant time."""
    return hmac.compare_digest(first.encode(), second.encode())
