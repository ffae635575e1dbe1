"""What a decision stands on: the votes whose seals verify.

The store seals every vote, standing decision and approval request with a key from its
ring (store.seals) and says, on reading them, what each seal shows; this module decides
what counts. An approved call runs only when its request's seal verifies (so its quorum,
expiry and call are the ones requested) and at least `required_approvals` distinct
people approved its current digest by votes whose seals verify, with no sealed rejection
of it. A row a database writer set, inserted or copied without the keys counts for
nothing: the call is refused, audited `tamper_detected` (bot.service.last_check).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from bot.canonical import digests_equal
from store.records import DecisionEvidence


@dataclass(frozen=True, kw_only=True)
class SealedQuorum:
    """Who approved the current digest by a sealed vote (and when: their sealed vote's
    time, what a stand-in's or an escalation's authority is judged at); `problem` says
    why that is not a decision the call may run on (None: it is)."""

    voters: tuple[str, ...]
    problem: str | None
    voted_at: Mapping[str, datetime] = field(default_factory=dict)


def sealed_quorum(evidence: DecisionEvidence) -> SealedQuorum:
    approval = evidence.approval
    if approval.snapshot_seal != "valid":
        return SealedQuorum(
            voters=(),
            problem=f"the seal of its snapshot is {_said(approval.snapshot_seal)} "
            "(what its approvers were shown was altered in the database)",
        )
    if evidence.request_seal != "valid":
        return SealedQuorum(
            voters=(),
            problem=f"the seal of its request is {_said(evidence.request_seal)} "
            "(its quorum, expiry or call was altered in the database)",
        )
    current = [c for c in evidence.votes if digests_equal(c.vote.digest, approval.arguments_digest)]
    sealed = [c.vote for c in current if c.seal == "valid"]
    if any(vote.decision == "rejected" for vote in sealed):
        return SealedQuorum(voters=(), problem="a sealed vote rejected it")
    voted_at = {v.voter: v.at for v in sealed if v.decision == "approved"}
    voters = tuple(voted_at)
    if len(voters) >= approval.required_approvals:
        return SealedQuorum(voters=voters, problem=None, voted_at=voted_at)
    unsealed = sorted({c.seal for c in current if c.seal != "valid"})
    seen = f"; {len(current) - len(sealed)} vote(s) whose seal is " if unsealed else ""
    said = " or ".join(_said(check) for check in unsealed)
    return SealedQuorum(
        voters=voters,
        problem=f"{len(voters)} of {approval.required_approvals} approval(s) have a valid "
        f"seal{seen}{said}",
    )


def _said(check: str) -> str:
    return {
        "missing": "missing",
        "unknown_key": "made with a key the ring lacks",
        "mismatch": "not its own (forged, altered or copied)",
    }.get(check, check)
