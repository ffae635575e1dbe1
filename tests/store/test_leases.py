"""Run leases: one worker per working run, takeover once the holder stops renewing, and
the fencing token that refuses a stale holder's writes; request memory shared by every
connection. On both engines (a real SQLite file, a fresh Postgres database), several
stores (connections, pools) on one database."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.errors import ConflictError, InputError, LeaseLostError
from bot.runtime.journal import Fresh, Interrupted
from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.records import LeaseTerms, RunLease
from tests.store.store_helpers import Clock, new_approval

TTL = 15.0


async def new_run(store: SqliteStore, run_id: str = "run-1", status: str = "paused") -> None:
    await store.create_run(
        run_id=run_id, agent_name="ops", agent_version="1", schema_version="1.1",
        state_json='{"n": 1}', status=status,  # type: ignore[arg-type]
    )  # fmt: skip


async def resuming_by(store: SqliteStore, owner: str, run_id: str = "run-1") -> RunLease:
    lease = await store.claim_run(
        run_id, expected_status="paused", new_status="resuming", owner=owner, lease_seconds=TTL
    )
    assert lease is not None
    return lease


def ledger_claim(store: SqliteStore, owner: str, token: int, key: str = "key-1"):
    return store.ledger_claim(
        execution_key=key, arguments_digest="d" * 64, run_id="run-1", tool_call_id="call-1",
        tool_name="deploy_release", owner=owner, lease_seconds=TTL, run_lease_token=token,
    )  # fmt: skip


async def test_a_claim_gives_one_worker_the_run_under_a_new_token(store: SqliteStore) -> None:
    await new_run(store)
    lease = await resuming_by(store, "w1")
    assert (lease.owner, lease.token, lease.run.status, lease.run.version) == (
        "w1", 1, "resuming", 2,
    )  # fmt: skip
    assert await store.run_lease("run-1") == lease
    again = await store.claim_run(
        "run-1", expected_status="paused", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert again is None


async def test_a_live_lease_is_not_taken_over_and_a_run_out_one_is(
    store: SqliteStore, clock: Clock
) -> None:
    await new_run(store)
    first = await resuming_by(store, "w1")
    clock.advance(TTL - 1)
    refused = await store.claim_run(
        "run-1", expected_status="resuming", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert refused is None
    assert await store.abandoned_runs() == []
    clock.advance(2)
    assert [run.run_id for run in await store.abandoned_runs()] == ["run-1"]
    taken = await store.claim_run(
        "run-1", expected_status="resuming", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert taken is not None
    assert (taken.owner, taken.token, taken.run.version) == ("w2", 2, first.run.version + 1)
    assert await store.abandoned_runs() == []


async def test_the_stale_holder_is_fenced_off_everywhere(store: SqliteStore, clock: Clock) -> None:
    await new_run(store)
    stale = await resuming_by(store, "w1")
    clock.advance(TTL + 1)
    taken = await store.claim_run(
        "run-1", expected_status="resuming", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert taken is not None

    with pytest.raises(LeaseLostError, match="w2 holds it under lease 2"):
        await store.renew_run_lease(stale, lease_seconds=TTL)
    with pytest.raises(LeaseLostError, match="no longer ours under lease 1"):
        await store.release_run_lease(stale, new_status="paused")
    with pytest.raises(LeaseLostError):
        await ledger_claim(store, "w1", stale.token)
    with pytest.raises(ConflictError):
        await store.save_run_state(
            "run-1", expected_version=stale.run.version, state_json="{}", status="completed",
            schema_version="1.1",
        )  # fmt: skip
    assert await store.ledger_entries(run_id="run-1") == []  # the refused claim wrote nothing
    run = await store.get_run("run-1")
    assert run is not None
    assert (run.status, run.version) == ("resuming", taken.run.version)
    assert await ledger_claim(store, "w2", taken.token) == Fresh(lease_token=1, attempt=1)


async def test_a_restarted_worker_reclaims_its_own_live_lease(store: SqliteStore) -> None:
    await new_run(store)
    before = await resuming_by(store, "w1")
    again = await store.claim_run(
        "run-1", expected_status="resuming", new_status="resuming", owner="w1", lease_seconds=TTL
    )
    assert again is not None
    assert again.token == before.token + 1


async def test_renewal_extends_the_run_and_its_executing_calls(
    store: SqliteStore, clock: Clock
) -> None:
    await new_run(store)
    lease = await resuming_by(store, "w1")
    await ledger_claim(store, "w1", lease.token)
    clock.advance(10)
    renewed = await store.renew_run_lease(lease, lease_seconds=TTL)
    assert (renewed.expires_at - clock.now).total_seconds() == TTL
    [entry] = await store.ledger_entries(run_id="run-1")
    assert entry.lease_expires_at == renewed.expires_at
    clock.advance(10)  # past the first expiry, within the renewed one
    assert await store.abandoned_runs() == []


async def test_release_and_non_working_saves_end_the_lease(store: SqliteStore) -> None:
    await new_run(store)
    lease = await resuming_by(store, "w1")
    paused = await store.release_run_lease(lease, new_status="paused")
    assert (paused.status, await store.run_lease("run-1")) == ("paused", None)
    with pytest.raises(LeaseLostError):
        await ledger_claim(store, "w1", lease.token)

    second = await resuming_by(store, "w1")
    assert second.token == lease.token + 2  # the release moved the token on, too
    saved = await store.save_run_state(
        "run-1", expected_version=second.run.version, state_json="{}", status="completed",
        schema_version="1.1",
    )  # fmt: skip
    assert saved.status == "completed"
    assert await store.run_lease("run-1") is None
    with pytest.raises(LeaseLostError):
        await store.renew_run_lease(second, lease_seconds=TTL)


async def test_cancel_ends_the_lease(store: SqliteStore) -> None:
    await new_run(store)
    lease = await resuming_by(store, "w1")
    outcome = await store.cancel_run(
        "run-1", expected_version=lease.run.version, actor="U-OPS", reason="stop"
    )
    assert outcome.won
    assert await store.run_lease("run-1") is None
    with pytest.raises(LeaseLostError):
        await store.renew_run_lease(lease, lease_seconds=TTL)
    with pytest.raises(LeaseLostError):
        await ledger_claim(store, "w1", lease.token)


async def test_a_run_created_with_a_lease_holds_the_first_token(store: SqliteStore) -> None:
    run = await store.create_run(
        run_id="run-1", agent_name="ops", agent_version="1", schema_version="1.1",
        state_json="{}", status="running", lease=LeaseTerms(owner="w1", seconds=TTL),
    )  # fmt: skip
    lease = await store.run_lease("run-1")
    assert lease is not None
    assert (lease.owner, lease.token, lease.run) == ("w1", 1, run)
    assert await ledger_claim(store, "w1", 1) == Fresh(lease_token=1, attempt=1)


async def test_bad_claims_are_refused_by_name_and_change_nothing(store: SqliteStore) -> None:
    await new_run(store)
    with pytest.raises(InputError, match="not to make it 'paused'"):
        await store.claim_run(
            "run-1", expected_status="paused", new_status="paused", owner="w1", lease_seconds=TTL
        )
    with pytest.raises(InputError, match="lease_seconds must be a positive number"):
        await store.claim_run(
            "run-1", expected_status="paused", new_status="resuming", owner="w1", lease_seconds=0
        )
    with pytest.raises(InputError, match="needs an owner"):
        await store.claim_run(
            "run-1", expected_status="paused", new_status="resuming", owner=" ", lease_seconds=1
        )
    with pytest.raises(InputError, match="no run 'nope'"):
        await store.claim_run(
            "nope", expected_status="paused", new_status="resuming", owner="w1", lease_seconds=1
        )
    with pytest.raises(InputError, match="not 'running'"):
        await store.release_run_lease(await resuming_by(store, "w1"), new_status="running")
    run = await store.get_run("run-1")
    assert run is not None
    assert (run.status, run.version) == ("resuming", 2)


async def test_racing_workers_on_one_file_take_a_run_over_once(
    database_url: str, keyring: KeyRing, clock: Clock, store: SqliteStore
) -> None:
    await new_run(store)
    await resuming_by(store, "dead")
    clock.advance(TTL + 1)
    others = [
        await open_store(database_url, keyring=keyring, clock=clock, environ={}) for _ in range(4)
    ]
    try:
        claims = await asyncio.gather(
            *(
                other.claim_run(
                    "run-1",
                    expected_status="resuming",
                    new_status="resuming",
                    owner=f"w{index}",
                    lease_seconds=TTL,
                )
                for index, other in enumerate(others)
            )
        )
    finally:
        for other in others:
            await other.close()
    winners = [lease for lease in claims if lease is not None]
    assert len(winners) == 1
    assert await store.run_lease("run-1") == winners[0]


async def test_request_memory_answers_once_per_ttl(store: SqliteStore, clock: Clock) -> None:
    assert await store.remember_requests([("sig:abc", 300), ("sig:abc", 300)]) == [True, False]
    assert await store.remember_requests([("sig:abc", 300), ("sig:other", 300)]) == [False, True]
    clock.advance(299)
    assert await store.remember_requests([("sig:abc", 300)]) == [False]
    clock.advance(2)
    assert await store.forget_expired_requests() == 2
    assert await store.remember_requests([("sig:abc", 300)]) == [True]
    assert await store.remember_requests([]) == []


async def test_request_memory_is_shared_by_every_connection(
    database_url: str, keyring: KeyRing, clock: Clock, store: SqliteStore
) -> None:
    others = [
        await open_store(database_url, keyring=keyring, clock=clock, environ={}) for _ in range(4)
    ]
    try:
        seen = await asyncio.gather(
            *(other.remember_requests([("event:Ev1", 60)]) for other in others)
        )
    finally:
        for other in others:
            await other.close()
    assert sorted(seen) == [[False], [False], [False], [True]]


async def test_request_memory_refuses_bad_input(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="key of 1-200"):
        await store.remember_requests([("ok", 1), ("", 1)])
    with pytest.raises(InputError, match="ttl_seconds must be a positive"):
        await store.remember_requests([("k", float("nan"))])
    assert await store.remember_requests([("ok", 1)]) == [True]  # the refused batch wrote nothing


async def test_a_takeover_ends_the_old_holders_call_leases(
    store: SqliteStore, clock: Clock
) -> None:
    await new_run(store)
    old = await resuming_by(store, "w1")
    clock.advance(TTL - 2)  # a call dispatched just before the run's lease ran out
    assert await ledger_claim(store, "w1", old.token) == Fresh(lease_token=1, attempt=1)
    clock.advance(3)  # the run's lease ran out; the call's own would last 13 s more
    taken = await store.claim_run(
        "run-1", expected_status="resuming", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert taken is not None
    again = await ledger_claim(store, "w2", taken.token)
    assert again == Interrupted(attempt=1)  # the replay policy decides, not a live lease


async def test_a_decided_run_nobody_resumed_is_found_once_settled(
    store: SqliteStore, clock: Clock
) -> None:
    await new_run(store)
    await store.add_approvals([new_approval(), new_approval(call="call-2")])
    clock.advance(5)
    await store.decide("ap-run-1-call-1", decision="approved", decider="U-A", reason="ok")
    assert await store.unresumed_runs(decided_before=clock.now) == []  # one still pending
    clock.advance(5)
    await store.revoke("ap-run-1-call-2", actor="U-REQ", reason="not needed")
    assert await store.unresumed_runs(decided_before=clock.now - timedelta(seconds=1)) == []
    [found] = await store.unresumed_runs(decided_before=clock.now)
    assert found.run_id == "run-1"

    lease = await resuming_by(store, "w1")  # someone claimed it: not waiting any more
    assert await store.unresumed_runs(decided_before=clock.now) == []
    clock.advance(1)
    await store.save_run_state(
        "run-1", expected_version=lease.run.version, state_json="{}", status="paused",
        schema_version="1.1",
    )  # fmt: skip
    assert await store.unresumed_runs(decided_before=clock.now) == []  # paused after them


async def test_an_expired_approval_counts_as_decided(store: SqliteStore, clock: Clock) -> None:
    await new_run(store)
    await store.add_approvals([new_approval(expires_at=clock.now + timedelta(seconds=60))])
    clock.advance(61)
    assert await store.unresumed_runs(decided_before=clock.now) == []  # still pending
    await store.expire_due()
    [found] = await store.unresumed_runs(decided_before=clock.now)
    assert found.run_id == "run-1"


async def test_one_renewal_extends_every_held_lease_and_leaves_out_the_lost(
    store: SqliteStore, clock: Clock
) -> None:
    held = []
    for run_id in ("run-1", "run-2", "run-3"):
        await new_run(store, run_id)
        held.append(await resuming_by(store, "w1", run_id))
    await ledger_claim(store, "w1", held[0].token)
    clock.advance(TTL + 1)  # w1 was slow: w2 takes run-2 over meanwhile
    taken = await store.claim_run(
        "run-2", expected_status="resuming", new_status="resuming", owner="w2", lease_seconds=TTL
    )
    assert taken is not None

    renewed = await store.renew_run_leases(held, lease_seconds=TTL)

    assert [(lease.run_id, lease.token) for lease in renewed] == [("run-1", 1), ("run-3", 1)]
    assert {lease.expires_at for lease in renewed} == {clock.now + timedelta(seconds=TTL)}
    assert [lease.run.run_id for lease in renewed] == ["run-1", "run-3"]
    [entry] = await store.ledger_entries(run_id="run-1")
    assert entry.lease_expires_at == clock.now + timedelta(seconds=TTL)  # its call, too
    assert await store.run_lease("run-2") == taken  # the lost one: nothing written
    assert await store.abandoned_runs() == []
    assert await store.renew_run_leases([], lease_seconds=TTL) == []
    with pytest.raises(LeaseLostError, match="w2 holds it under lease 2"):
        await store.renew_run_lease(held[1], lease_seconds=TTL)  # one at a time, as before


async def test_a_claim_unless_held_leaves_a_run_an_operator_paused(store: SqliteStore) -> None:
    await new_run(store)
    await store.set_run_hold("run-1", actor="U-ops", reason="incident")

    refused = await store.claim_run(
        "run-1", expected_status="paused", new_status="resuming", owner="w1",
        lease_seconds=TTL, unless_held=True,
    )  # fmt: skip

    assert refused is None
    run = await store.get_run("run-1")
    assert run is not None
    assert (run.status, run.held_by) == ("paused", "U-ops")
    assert await store.run_lease("run-1") is None
    await store.set_run_hold("run-1", actor="U-ops", reason=None)
    released = await store.claim_run(
        "run-1", expected_status="paused", new_status="resuming", owner="w1",
        lease_seconds=TTL, unless_held=True,
    )  # fmt: skip
    assert released is not None
    assert released.run.status == "resuming"
