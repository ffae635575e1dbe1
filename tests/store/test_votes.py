"""Votes toward a quorum, amendments, reminders and the indexed reads (migration 0004)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.errors import InputError
from store import SqliteStore, open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import Amendment
from tests.store.postgres_db import RawRefused
from tests.store.store_helpers import DIGEST, T0, Clock, make_run, new_approval, raw

NEW_DIGEST = "b" * 64


async def quorum(
    store: Store,
    required: int = 2,
    *,
    expires_at: datetime | None = None,
    remind_at: datetime | None = None,
) -> str:
    await make_run(store)
    planned = dataclasses.replace(
        new_approval(expires_at=expires_at), required_approvals=required, remind_at=remind_at
    )
    [record] = await store.add_approvals([planned])
    return record.approval_id


async def quorum_again(store: Store) -> str:
    """A second quorum-of-2 approval in the same run."""
    planned = dataclasses.replace(new_approval(call="call-2"), required_approvals=2)
    [record] = await store.add_approvals([planned])
    return record.approval_id


async def test_votes_count_per_person_until_the_quorum(store: SqliteStore) -> None:
    approval_id = await quorum(store, required=2)

    first = await store.vote(
        approval_id, decision="approved", voter="UA", digest=DIGEST, reason="a"
    )
    again = await store.vote(
        approval_id, decision="approved", voter="UA", digest=DIGEST, reason="b"
    )
    last = await store.vote(approval_id, decision="approved", voter="UB", digest=DIGEST, reason="c")

    assert (first.result, first.record.status) == ("counted", "pending")
    assert (again.result, [v.voter for v in again.votes]) == ("already_voted", ["UA"])
    assert (last.result, last.record.status, last.record.decider) == ("decided", "approved", "UB")
    assert [v.voter for v in last.votes] == ["UA", "UB"]
    kinds = [(e.kind, e.actor) for e in await store.audit_events()]
    assert kinds == [("requested", "U-REQ"), ("voted", "UA"), ("decided", "UB")]
    decided = (await store.audit_events())[-1]
    assert decided.detail["voters"] == ["UA", "UB"]


async def test_two_racing_final_votes_make_exactly_one_transition(store: SqliteStore) -> None:
    approval_id = await quorum(store, required=2)
    await store.vote(approval_id, decision="approved", voter="UA", digest=DIGEST, reason="a")

    outcomes = await asyncio.gather(
        *(
            store.vote(approval_id, decision="approved", voter=f"U{n}", digest=DIGEST, reason="r")
            for n in range(8)
        )
    )

    assert sorted(o.result for o in outcomes) == ["closed"] * 7 + ["decided"]
    assert [e.kind for e in await store.audit_events()].count("decided") == 1
    [winner] = [o for o in outcomes if o.result == "decided"]
    assert all(o.record.decider == winner.record.decider for o in outcomes)


async def test_one_rejection_rejects_and_stale_or_closed_votes_change_nothing(
    store: SqliteStore,
) -> None:
    approval_id = await quorum(store, required=3)
    stale = await store.vote(
        approval_id, decision="approved", voter="UA", digest=NEW_DIGEST, reason="a"
    )
    assert (stale.result, stale.votes) == ("stale_digest", ())
    no = await store.vote(
        approval_id, decision="rejected", voter="UB", digest=DIGEST, reason="r", message="m"
    )
    late = await store.vote(approval_id, decision="approved", voter="UC", digest=DIGEST, reason="c")

    assert (no.result, no.record.status, no.record.message) == ("decided", "rejected", "m")
    assert (late.result, late.record.status) == ("closed", "rejected")
    assert [v.voter for v in (await store.votes([approval_id]))[approval_id]] == ["UB"]


async def test_an_amendment_to_the_same_arguments_keeps_the_other_votes(
    store: SqliteStore,
) -> None:
    approval_id = await quorum(store, required=3)
    await store.vote(approval_id, decision="approved", voter="UA", digest=DIGEST, reason="a")
    same = Amendment(arguments_digest=DIGEST, snapshot='{"service": "api"}')
    outcome = await store.vote(
        approval_id, decision="approved", voter="UB", digest=DIGEST, reason="b", amend=same
    )
    assert (outcome.result, outcome.record.amended_by) == ("counted", None)
    assert [v.voter for v in outcome.votes] == ["UA", "UB"]
    assert not [e for e in await store.audit_events() if e.kind == "arguments_changed"]


async def test_an_amendment_moves_the_digest_and_drops_earlier_votes(store: SqliteStore) -> None:
    approval_id = await quorum(store, required=2)
    await store.vote(approval_id, decision="approved", voter="UA", digest=DIGEST, reason="a")
    change = Amendment(arguments_digest=NEW_DIGEST, snapshot='{"service": "web"}')

    amended = await store.vote(
        approval_id, decision="approved", voter="UB", digest=DIGEST, reason="b", amend=change
    )
    assert (amended.result, amended.record.arguments_digest) == ("counted", NEW_DIGEST)
    assert (amended.record.amended_by, amended.record.snapshot) == ("UB", '{"service": "web"}')
    assert [v.voter for v in amended.votes] == ["UB"]  # UA approved the old arguments
    done = await store.vote(
        approval_id, decision="approved", voter="UA", digest=NEW_DIGEST, reason="a2"
    )
    assert done.result == "decided"

    back = Amendment(arguments_digest=DIGEST, snapshot='{"service": "api"}')
    reopened = await quorum_again(store)
    await store.vote(reopened, decision="approved", voter="UA", digest=DIGEST, reason="a")
    await store.vote(
        reopened, decision="approved", voter="UB", digest=DIGEST, reason="b", amend=change
    )
    aba = await store.vote(
        reopened, decision="approved", voter="UC", digest=NEW_DIGEST, reason="c", amend=back
    )
    assert (aba.result, [v.voter for v in aba.votes]) == ("counted", ["UC"])  # not UA again
    assert (
        await store.vote(reopened, decision="approved", voter="UA", digest=DIGEST, reason="a")
    ).result == "decided"

    [changed, *_] = [e for e in await store.audit_events() if e.kind == "arguments_changed"]
    assert (changed.detail["old_digest"], changed.detail["new_digest"]) == (DIGEST, NEW_DIGEST)
    with pytest.raises(InputError, match="only an approval can change"):
        await store.vote(
            approval_id, decision="rejected", voter="UC", digest=DIGEST, reason="x", amend=change
        )


async def test_a_vote_past_expiry_expires_it(store: SqliteStore, clock: Clock) -> None:
    approval_id = await quorum(store, required=1, expires_at=T0 + timedelta(minutes=5))
    clock.advance(300)
    outcome = await store.vote(
        approval_id, decision="approved", voter="UA", digest=DIGEST, reason="a"
    )
    assert (outcome.result, outcome.record.status) == ("expired", "expired")
    assert await store.votes([approval_id]) == {approval_id: []}
    assert [e.kind for e in await store.audit_events()] == ["requested", "expired"]


async def test_unknown_approval_and_bad_quorum_are_input_errors(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="no approval with id 'nope'"):
        await store.vote("nope", decision="approved", voter="UA", digest=DIGEST, reason=None)
    await make_run(store)
    with pytest.raises(InputError, match="required_approvals >= 1"):
        await store.add_approvals([dataclasses.replace(new_approval(), required_approvals=0)])


async def test_reminders_are_claimed_once(store: SqliteStore, clock: Clock) -> None:
    approval_id = await quorum(
        store,
        required=1,
        expires_at=T0 + timedelta(hours=2),
        remind_at=T0 + timedelta(hours=1),
    )
    assert await store.claim_reminders(now=T0 + timedelta(minutes=59)) == []
    [due] = await store.claim_reminders(now=T0 + timedelta(hours=1))
    assert (due.approval_id, due.reminded_at) == (approval_id, T0 + timedelta(hours=1))
    both = await asyncio.gather(
        store.claim_reminders(now=T0 + timedelta(hours=1, minutes=1)),
        store.claim_reminders(now=T0 + timedelta(hours=1, minutes=2)),
    )
    assert list(both) == [[], []]
    assert [e.kind for e in await store.audit_events()].count("reminded") == 1


async def test_a_decided_approval_cannot_be_moved_by_hand(
    store: SqliteStore, database_url: str
) -> None:
    approval_id = await quorum(store, required=1)
    await store.vote(approval_id, decision="rejected", voter="UA", digest=DIGEST, reason="no")
    with raw(database_url) as connection, pytest.raises(RawRefused, match="final"):
        connection.execute(
            "UPDATE approvals SET status = 'approved' WHERE approval_id = ?", (approval_id,)
        )


async def test_pending_pages_follow_the_keyset_and_filters(
    store: SqliteStore, clock: Clock
) -> None:
    await make_run(store)
    tools = ["deploy_release", "set_config", "restart_service"]
    for n in range(9):
        clock.advance(1)
        planned = dataclasses.replace(
            new_approval(call=f"c{n}"),
            tool_name=tools[n % 3],
            requester="U-REQ" if n != 4 else "U-OTHER",
        )
        await store.add_approvals([planned])

    pages, after = [], None
    while True:
        page = await store.pending_page(after=after, limit=4)
        if not page:
            break
        pages.append([r.tool_call_id for r in page])
        after = (page[-1].created_at, page[-1].approval_id)
    assert pages == [["c0", "c1", "c2", "c3"], ["c4", "c5", "c6", "c7"], ["c8"]]

    only = await store.pending_page(limit=20, tool_names=["set_config"])
    assert [r.tool_call_id for r in only] == ["c1", "c4", "c7"]
    others = await store.pending_page(limit=20, except_tool_names=["deploy_release"])
    assert [r.tool_call_id for r in others] == ["c1", "c2", "c4", "c5", "c7", "c8"]
    not_mine = await store.pending_page(limit=20, not_requested_by="U-REQ")
    assert [r.tool_call_id for r in not_mine] == ["c4"]
    assert await store.pending_page(limit=20, tool_names=[]) == []
    by_requester = await store.approvals_requested_by("U-REQ", limit=2)
    assert [r.tool_call_id for r in by_requester] == ["c8", "c7"]
    with pytest.raises(InputError, match="1 to 500"):
        await store.pending_page(limit=0)


async def test_the_reads_use_their_indexes(sqlite_store: SqliteStore, db_path: Path) -> None:
    """SQLite's plans name their index (the queries say INDEXED BY); Postgres plans
    its own way."""
    await make_run(sqlite_store)
    queries = {
        "approvals_pending_page": "SELECT * FROM approvals WHERE status = 'pending' "
        "AND (created_at, approval_id) > ('', '') ORDER BY created_at, approval_id LIMIT 20",
        "approvals_by_requester": "SELECT * FROM approvals WHERE requester = 'U' "
        "ORDER BY created_at DESC LIMIT 20",
        "approvals_by_decision": "SELECT * FROM approvals WHERE decided_at IS NOT NULL "
        "ORDER BY decided_at DESC LIMIT 20",
    }
    with raw(db_path) as connection:
        for index, sql in queries.items():
            plan = " ".join(str(row[-1]) for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert index in plan, plan
            assert "TEMP B-TREE" not in plan, plan


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    required=st.integers(min_value=1, max_value=3),
    ballots=st.lists(
        st.tuples(st.sampled_from(["UA", "UB", "UC", "UD"]), st.booleans()), max_size=8
    ),
)
async def test_any_sequence_of_votes_follows_the_quorum_rule(
    tmp_path_factory: pytest.TempPathFactory, required: int, ballots: list[tuple[str, bool]]
) -> None:
    """Model: an approval closes at the first rejection, or when `required` distinct
    people approved; whatever comes after changes nothing."""
    path = tmp_path_factory.mktemp("votes") / "approvals.db"
    store = await open_store(str(path), keyring=KeyRing([generate_key("k1")]), environ={})
    try:
        approval_id = await quorum(store, required=required)
        approvers: list[str] = []
        expected_status = "pending"
        for voter, approve in ballots:
            outcome = await store.vote(
                approval_id,
                decision="approved" if approve else "rejected",
                voter=voter,
                digest=DIGEST,
                reason="r",
            )
            if expected_status != "pending":
                assert outcome.result == "closed"
            elif voter in approvers:
                assert outcome.result == "already_voted"
            elif not approve:
                expected_status = "rejected"
                assert outcome.result == "decided"
            else:
                approvers.append(voter)
                closes = len(approvers) == required
                expected_status = "approved" if closes else "pending"
                assert outcome.result == ("decided" if closes else "counted")
            assert outcome.record.status == expected_status
        decided = [e for e in await store.audit_events() if e.kind == "decided"]
        assert len(decided) == (0 if expected_status == "pending" else 1)
        assert (await store.verify_audit()).ok
    finally:
        await store.close()
