"""The quorum rule of votes (store.sql.votes): which votes count and when they decide,
and what a vote must say. Pure functions: no database."""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from bot.errors import InputError
from store.records import Amendment, Verdict, VoteRecord
from store.sql.approval_checks import check_verdict


def check_vote(decision: str, *, voter: str, amend: Amendment | None) -> None:
    check_verdict(decision)
    if not voter:
        raise InputError("a vote needs a voter")
    if amend is not None and decision != "approved":
        raise InputError("only an approval can change the arguments")


@dataclass(frozen=True, kw_only=True)
class Tally:
    """How the votes on an approval's current arguments stand."""

    verdict: Verdict | None  # None: the approval stays pending
    approvers: tuple[str, ...]  # distinct people who approved these arguments, in vote order
    rejecters: tuple[str, ...]


def tally(votes: Iterable[VoteRecord], *, required: int, digest: str) -> Tally:
    """The quorum rule. Only votes on the current arguments (`digest`) count: a change
    of arguments starts the count again. One rejection rejects; `required` distinct
    people approving approves; anything less leaves the approval pending."""
    if required < 1:
        raise InputError(f"a quorum needs at least one approval, not {required}")
    approvers: list[str] = []
    rejecters: list[str] = []
    for vote in votes:
        if not hmac.compare_digest(vote.digest.encode(), digest.encode()):
            continue
        voters = approvers if vote.decision == "approved" else rejecters
        if vote.voter not in voters:
            voters.append(vote.voter)
    verdict: Verdict | None = None
    if rejecters:
        verdict = "rejected"
    elif len(approvers) >= required:
        verdict = "approved"
    return Tally(verdict=verdict, approvers=tuple(approvers), rejecters=tuple(rejecters))
