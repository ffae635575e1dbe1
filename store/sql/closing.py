"""The vote people cast most, as one statement (store.sql.votes): an approval, on the
arguments under review, of an approval that needs one, pending and unexpired, by
someone who has not voted on them. The conditional UPDATE closes the approval, and the
vote and its `decided` event are inserted for the row it changed (on Postgres one round
trip, no BEGIN or COMMIT). It changes a row only in the one case where the whole vote
transaction (`_Ballot.cast_in`) would have ended the same way; any other vote matches
nothing and takes the transaction.

Built straight from the vote's values, not through a `_Ballot`: it runs on every click
on Approve, and on a small machine the client's CPU per vote is the rate's bound
(bench/pg_vote_cpu.py).
"""

from __future__ import annotations

from store.records import VoteOutcome, VoteRecord
from store.rows import APPROVAL_COLUMNS, VOTE_COLUMNS, Row, from_db
from store.seals import SEAL_COLUMNS, DecisionSeals, Seal, read_approval
from store.sql import audit
from store.tx import FollowUp, FromChanged, Statement

CLOSE_ALONE = (
    "UPDATE approvals SET status = 'approved', decider = ?, reason = ?, "
    "message = NULL, decided_at = ? WHERE approval_id = ? AND status = 'pending' "
    "AND required_approvals = 1 AND arguments_digest = ? "
    "AND (expires_at IS NULL OR expires_at > ?) "
    "AND NOT EXISTS (SELECT 1 FROM approval_votes v WHERE v.approval_id = ? "
    f"AND v.voter = ? AND v.digest = ?) RETURNING {APPROVAL_COLUMNS}"
)  # one text, so each cache keyed by it finds it at once
VOTE_ROW = (*VOTE_COLUMNS.split(", "), *SEAL_COLUMNS.split(", "))
FROM_APPROVAL = FromChanged("approval_id")
FROM_DIGEST = FromChanged("arguments_digest")


def closing_alone(
    *,
    approval_id: str,
    voter: str,
    digest: str,
    reason: str | None,
    at_text: str,
    via: str | None,
    seal: Seal,
) -> Statement:
    """The closing approval as one statement: the update, then for the row it changed
    the sealed vote and the `decided` event (what the transaction would write)."""
    detail = {
        "decision": "approved",
        "reason": reason,
        "message": None,
        "digest": digest,
        "voters": [voter],
    }
    if via is not None:  # store.audit.with_via, without its copy
        detail["via"] = via
    return Statement(
        CLOSE_ALONE,
        (voter, reason, at_text, approval_id, digest, at_text, approval_id, voter, digest),
        "one",
        (
            FollowUp(
                "approval_votes",
                VOTE_ROW,
                (
                    FROM_APPROVAL,
                    voter,
                    "approved",
                    FROM_DIGEST,
                    reason,
                    at_text,
                    seal.key_id,
                    seal.mac,
                ),
            ),
            audit.follow_up("decided", at=at_text, actor=voter, detail=detail),
        ),
    )


def closed_alone(
    seals: DecisionSeals, row: Row, *, voter: str, reason: str | None, at_text: str
) -> VoteOutcome:
    """The outcome of `closing_alone` that changed `row`: decided, by this one vote."""
    record = read_approval(seals, row)
    vote = VoteRecord(
        approval_id=record.approval_id,
        voter=voter,
        decision="approved",
        digest=record.arguments_digest,
        reason=reason,
        at=from_db(at_text),  # as it reads back from the row
    )
    return VoteOutcome(result="decided", record=record, votes=(vote,))
