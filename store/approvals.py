"""Approval rules every engine shares: what a new approval, a decision, a revocation and
a vote must carry, how many rows a list may return, and the quorum rule.

The quorum rule (`tally`) is a pure function of the votes, the approval's required
number of approvals and its current arguments digest: the engine's vote transaction
(store/sqlite/votes.py) reads the votes, asks `tally`, and makes the transition it
names, all in one write transaction.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import get_args

from bot.errors import InputError
from store.records import (
    LEGACY_KEY_PREFIX,
    Amendment,
    ApprovalStatus,
    NewApproval,
    Verdict,
    VoteRecord,
)
from store.rows import to_db

APPROVAL_STATUSES: frozenset[str] = frozenset(get_args(ApprovalStatus))
VERDICTS: frozenset[str] = frozenset(get_args(Verdict))
MAX_PAGE = 500


def check_new(new: NewApproval) -> None:
    for name in ("approval_id", "run_id", "tool_call_id", "tool_name", "arguments_digest"):
        if not getattr(new, name):
            raise InputError(f"new approval has an empty {name}")
    if new.required_approvals < 1:
        raise InputError("new approval needs required_approvals >= 1")
    if new.execution_key is not None and (
        not new.execution_key or new.execution_key.startswith(LEGACY_KEY_PREFIX)
    ):
        raise InputError(
            f"new approval's execution key {new.execution_key!r} is empty or reserved "
            f"(the {LEGACY_KEY_PREFIX!r} prefix marks approvals from before keys were stored)"
        )
    for moment in (new.expires_at, new.remind_at):
        if moment is not None:
            to_db(moment)  # refuses a naive time before anything is written


def check_status(status: str | None) -> None:
    if status is not None and status not in APPROVAL_STATUSES:
        raise InputError(f"approval status {status!r} is not one of {sorted(APPROVAL_STATUSES)}")


def check_decision(decision: str, *, decider: str) -> None:
    _check_verdict(decision)
    if not decider:
        raise InputError("a decision needs a decider")


def check_revocation(*, actor: str) -> None:
    if not actor:
        raise InputError("a revocation needs an actor")


def check_vote(decision: str, *, voter: str, amend: Amendment | None) -> None:
    _check_verdict(decision)
    if not voter:
        raise InputError("a vote needs a voter")
    if amend is not None and decision != "approved":
        raise InputError("only an approval can change the arguments")


def _check_verdict(decision: str) -> None:
    if decision not in VERDICTS:
        raise InputError(f"decision {decision!r} is not one of {sorted(VERDICTS)}")


def check_page(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InputError(f"a page holds 1 to {MAX_PAGE} approvals, not {limit}")


def check_batch(batch: int) -> None:
    """A sweep's batch: how many approvals one of its transactions claims at most."""
    if not 1 <= batch <= MAX_PAGE:
        raise InputError(f"a sweep's batch holds 1 to {MAX_PAGE} approvals, not {batch}")


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


PURGED_NOTE = "(purged by retention)"


def purged_snapshot(tool_name: str, arguments_digest: str) -> str:
    """The review snapshot JSON an approval keeps once retention purged its run: the
    tool and the digest, no arguments (it still reads as a review snapshot)."""
    return json.dumps(
        {
            "tool_name": tool_name,
            "arguments": {},
            "redacted_paths": [],
            "omitted_fields": [PURGED_NOTE],
            "digest": arguments_digest,
            "purged": True,
        },
        sort_keys=True,
    )
