"""The quorum rule as a pure function: which votes count and when they decide."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import InputError
from store.records import Verdict, VoteRecord
from store.sql.quorum import tally
from tests.store.store_helpers import DIGEST, T0

OLD_DIGEST = "0" * 64


def vote(voter: str, decision: Verdict = "approved", digest: str = DIGEST) -> VoteRecord:
    return VoteRecord(
        approval_id="ap-1", voter=voter, decision=decision, digest=digest, reason=None, at=T0
    )


def test_no_votes_leave_the_approval_pending() -> None:
    counted = tally([], required=1, digest=DIGEST)
    assert (counted.verdict, counted.approvers, counted.rejecters) == (None, (), ())


def test_the_required_number_of_distinct_approvals_approves() -> None:
    short = tally([vote("UA"), vote("UB")], required=3, digest=DIGEST)
    met = tally([vote("UA"), vote("UB"), vote("UC")], required=3, digest=DIGEST)
    assert (short.verdict, short.approvers) == (None, ("UA", "UB"))
    assert (met.verdict, met.approvers) == ("approved", ("UA", "UB", "UC"))


def test_one_person_approving_twice_counts_once() -> None:
    counted = tally([vote("UA"), vote("UA")], required=2, digest=DIGEST)
    assert (counted.verdict, counted.approvers) == (None, ("UA",))


def test_one_rejection_rejects_whatever_the_approvals() -> None:
    votes = [vote("UA"), vote("UB"), vote("UC", "rejected")]
    counted = tally(votes, required=2, digest=DIGEST)
    assert (counted.verdict, counted.rejecters) == ("rejected", ("UC",))


def test_votes_on_older_arguments_do_not_count() -> None:
    votes = [vote("UA", digest=OLD_DIGEST), vote("UB", "rejected", OLD_DIGEST), vote("UC")]
    counted = tally(votes, required=2, digest=DIGEST)
    assert (counted.verdict, counted.approvers, counted.rejecters) == (None, ("UC",), ())


def test_a_quorum_below_one_is_refused() -> None:
    with pytest.raises(InputError, match="at least one approval"):
        tally([vote("UA")], required=0, digest=DIGEST)


ballots = st.lists(
    st.builds(
        vote,
        voter=st.sampled_from(["UA", "UB", "UC", "UD"]),
        decision=st.sampled_from(["approved", "rejected"]),
        digest=st.sampled_from([DIGEST, OLD_DIGEST]),
    ),
    max_size=8,
)


@given(votes=ballots, required=st.integers(min_value=1, max_value=4), order=st.randoms())
def test_the_verdict_depends_on_the_current_votes_only_and_not_their_order(
    votes: list[VoteRecord], required: int, order: random.Random
) -> None:
    counted = tally(votes, required=required, digest=DIGEST)
    current = [v for v in votes if v.digest == DIGEST]
    shuffled = list(votes)
    order.shuffle(shuffled)
    assert tally(current, required=required, digest=DIGEST) == counted
    assert tally(shuffled, required=required, digest=DIGEST).verdict == counted.verdict
    assert (counted.verdict == "rejected") == any(v.decision == "rejected" for v in current)
