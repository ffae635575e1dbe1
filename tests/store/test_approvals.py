"""Approvals: one conditional update per transition; racing deciders; expiry; revocation."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import pytest

from bot.errors import InputError
from store import SqliteStore, open_store
from store.crypto import KeyRing
from tests.store.postgres_db import RawRefused
from tests.store.store_helpers import Clock, make_run, new_approval, raw


async def test_add_is_unique_per_run_and_call_and_audited_once(store: SqliteStore) -> None:
    await make_run(store)
    first = await store.add_approvals([new_approval()])
    again = await store.add_approvals([new_approval(approval_id="another-id")])

    assert again[0].approval_id == first[0].approval_id
    assert first[0].status == "pending"
    assert [e.kind for e in await store.audit_events()] == ["requested"]


async def test_add_refuses_unknown_run_and_writes_nothing(store: SqliteStore) -> None:
    await make_run(store)
    with pytest.raises(InputError, match="unknown run"):
        await store.add_approvals([new_approval(call="ok"), new_approval(run_id="nope")])
    assert await store.list_approvals() == []
    assert await store.audit_events() == []


async def test_decide_wins_once_and_loser_learns_the_winner(
    store: SqliteStore, clock: Clock
) -> None:
    await make_run(store)
    (approval,) = await store.add_approvals([new_approval()])

    won = await store.decide(
        approval.approval_id, decision="approved", decider="U-A", reason="looks right"
    )
    clock.advance(5)
    lost = await store.decide(approval.approval_id, decision="rejected", decider="U-B", reason="no")

    assert won.won
    assert won.record.status == "approved"
    assert not lost.won
    assert lost.record.status == "approved"
    assert lost.record.decider == "U-A"
    assert lost.record.decided_at == won.record.decided_at
    decided = await store.audit_events(approval_id=approval.approval_id)
    assert [e.kind for e in decided] == ["requested", "decided"]
    assert decided[1].actor == "U-A"
    assert decided[1].detail["reason"] == "looks right"


async def test_decide_unknown_approval_is_input_error(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="no approval"):
        await store.decide("missing", decision="approved", decider="U", reason=None)


async def test_decide_refuses_a_bad_decision_word(store: SqliteStore) -> None:
    await make_run(store)
    (approval,) = await store.add_approvals([new_approval()])
    with pytest.raises(InputError, match="decision"):
        await store.decide(approval.approval_id, decision="maybe", decider="U", reason=None)  # type: ignore[arg-type]
    assert (await store.get_approval(approval.approval_id)).status == "pending"  # type: ignore[union-attr]


async def test_decide_after_expiry_expires_instead(store: SqliteStore, clock: Clock) -> None:
    await make_run(store)
    (approval,) = await store.add_approvals(
        [new_approval(expires_at=clock.now + timedelta(minutes=10))]
    )
    clock.advance(600)

    outcome = await store.decide(approval.approval_id, decision="approved", decider="U", reason="")

    assert not outcome.won
    assert outcome.record.status == "expired"
    kinds = [e.kind for e in await store.audit_events(approval_id=approval.approval_id)]
    assert kinds == ["requested", "expired"]


async def test_expire_due_expires_only_overdue_pending(store: SqliteStore, clock: Clock) -> None:
    await make_run(store)
    soon, later, decided = await store.add_approvals(
        [
            new_approval(call="soon", expires_at=clock.now + timedelta(seconds=30)),
            new_approval(call="later", expires_at=clock.now + timedelta(hours=1)),
            new_approval(call="decided", expires_at=clock.now + timedelta(seconds=30)),
        ]
    )
    await store.decide(decided.approval_id, decision="rejected", decider="U", reason="no")
    clock.advance(31)

    expired = await store.expire_due()

    assert [r.approval_id for r in expired] == [soon.approval_id]
    assert (await store.get_approval(later.approval_id)).status == "pending"  # type: ignore[union-attr]
    assert (await store.get_approval(decided.approval_id)).status == "rejected"  # type: ignore[union-attr]
    assert await store.expire_due() == []


async def test_revoke_pending_and_approved_but_not_executed(store: SqliteStore) -> None:
    await make_run(store)
    pending, approved, executed = await store.add_approvals(
        [new_approval(call="p"), new_approval(call="a"), new_approval(call="x")]
    )
    for approval in (approved, executed):
        await store.decide(approval.approval_id, decision="approved", decider="U-A", reason="ok")
    await store.ledger_claim(
        execution_key="key-x", arguments_digest="d", run_id="run-1", tool_call_id="x",
        tool_name="deploy_release", owner="w", lease_seconds=60,
    )  # fmt: skip

    revoked_pending = await store.revoke(pending.approval_id, actor="U-OPS", reason="stop")
    revoked_approved = await store.revoke(approved.approval_id, actor="U-OPS", reason="stop")
    too_late = await store.revoke(executed.approval_id, actor="U-OPS", reason="stop")

    assert revoked_pending.won
    assert revoked_pending.record.status == "revoked"
    assert revoked_approved.won
    assert revoked_approved.record.revoked_by == "U-OPS"
    assert revoked_approved.record.decider == "U-A"
    assert not too_late.won
    assert too_late.record.status == "approved"
    revoked = [e for e in await store.audit_events() if e.kind == "revoked"]
    assert len(revoked) == 2


async def test_a_call_id_reused_from_an_earlier_turn_does_not_block_revocation(
    store: SqliteStore, clock: Clock
) -> None:
    # providers may reuse call ids across turns: turn 1's `c1` (a read, no approval)
    # ran; turn 3's `c1` is an approved deploy that has not run and must stay revocable
    await make_run(store)
    await store.ledger_claim(
        execution_key="key-turn-1", arguments_digest="d", run_id="run-1", tool_call_id="c1",
        tool_name="get_status", owner="w", lease_seconds=60,
    )  # fmt: skip
    clock.advance(5)
    (approval,) = await store.add_approvals([new_approval(call="c1")])
    await store.decide(approval.approval_id, decision="approved", decider="U-A", reason="ok")

    revoked = await store.revoke(approval.approval_id, actor="U-OPS", reason="stop")

    assert revoked.won
    assert revoked.record.status == "revoked"


async def test_terminal_states_are_final_even_for_raw_sql(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    (approval,) = await store.add_approvals([new_approval()])
    await store.decide(approval.approval_id, decision="rejected", decider="U", reason="no")

    again = await store.revoke(approval.approval_id, actor="U-OPS", reason=None)
    assert not again.won
    assert again.record.status == "rejected"
    with raw(database_url) as connection, pytest.raises(RawRefused, match="final"):
        connection.execute("UPDATE approvals SET status = 'approved'")


async def test_set_approval_message_records_the_card(store: SqliteStore) -> None:
    await make_run(store)
    (approval,) = await store.add_approvals([new_approval()])
    await store.set_approval_message(approval.approval_id, channel="C1", ts="1700000000.000100")
    record = await store.get_approval(approval.approval_id)
    assert record is not None
    assert (record.slack_channel, record.slack_ts) == ("C1", "1700000000.000100")
    with pytest.raises(InputError):
        await store.set_approval_message("missing", channel="C1", ts="1")


async def test_racing_tasks_on_one_store_exactly_one_wins(store: SqliteStore) -> None:
    await make_run(store)
    approvals = await store.add_approvals([new_approval(call=f"c{i}") for i in range(20)])
    for approval in approvals:
        outcomes = await asyncio.gather(
            *(
                store.decide(
                    approval.approval_id,
                    decision="approved" if n % 2 else "rejected",
                    decider=f"U{n}",
                    reason=f"r{n}",
                )
                for n in range(6)
            )
        )
        winners = [o for o in outcomes if o.won]
        assert len(winners) == 1
        for loser in (o for o in outcomes if not o.won):
            assert loser.record.decider == winners[0].record.decider
            assert loser.record.status == winners[0].record.status
    decided = [e for e in await store.audit_events() if e.kind == "decided"]
    assert len(decided) == len(approvals)
    assert (await store.verify_audit()).ok


async def test_racing_deciders_over_several_connections(
    database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    stores = [
        await open_store(database_url, keyring=keyring, clock=clock, environ={}) for _ in range(4)
    ]
    try:
        await make_run(stores[0])
        approvals = await stores[0].add_approvals([new_approval(call=f"c{i}") for i in range(15)])
        for approval in approvals:
            outcomes = await asyncio.gather(
                *(
                    replica.decide(
                        approval.approval_id, decision="approved", decider=f"U{n}", reason=None
                    )
                    for n, replica in enumerate(stores)
                )
            )
            winners = [o for o in outcomes if o.won]
            assert len(winners) == 1
            assert {o.record.decider for o in outcomes} == {winners[0].record.decider}
        verification = await stores[1].verify_audit()
        assert verification.ok
        assert verification.checked == 30
    finally:
        for replica in stores:
            await replica.close()


async def test_a_cancelled_decider_leaves_the_decision_whole(store: SqliteStore) -> None:
    await make_run(store)
    approvals = await store.add_approvals([new_approval(call=f"c{i}") for i in range(10)])
    for approval in approvals:
        task = asyncio.create_task(
            store.decide(approval.approval_id, decision="approved", decider="U-A", reason=None)
        )
        await asyncio.sleep(0)  # yield once: the task reaches its write, then is cancelled
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    follow_up = await store.decide(
        approvals[0].approval_id, decision="rejected", decider="U-B", reason=None
    )
    assert follow_up.record.approval_id == approvals[0].approval_id
    decided = {e.approval_id for e in await store.audit_events() if e.kind == "decided"}
    for approval in approvals:
        record = await store.get_approval(approval.approval_id)
        assert record is not None
        assert (record.status != "pending") == (approval.approval_id in decided)
    assert (await store.verify_audit()).ok


async def test_an_approval_and_its_run_come_in_one_read(store: SqliteStore) -> None:
    await make_run(store)
    [added] = await store.add_approvals([new_approval()])

    found = await store.approval_and_run(added.approval_id)

    assert found is not None
    approval, run = found
    assert approval == await store.get_approval(added.approval_id)
    assert run == await store.get_run(added.run_id)
    assert await store.approval_and_run("no-such-approval") is None
