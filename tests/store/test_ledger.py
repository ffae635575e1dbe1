"""The ledger: claims, leases, fencing, reuse, reconciliation; and StoreJournal with the
real Runner (one approved state resumed by two workers runs the tool once)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.errors import (
    ExecutionKeyConflict,
    LeaseHeldError,
    LeaseLostError,
    ResolutionError,
    UnknownCallError,
)
from bot.runtime import Agent, Runner, RunState, ScriptedModel, tool
from bot.runtime.journal import Fresh, Interrupted, Recorded, Uncertain
from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.journal import StoreJournal
from tests.store.store_helpers import Clock


def claim(store: SqliteStore, *, owner: str = "w1", digest: str = "d1", redispatch: bool = False):
    return store.ledger_claim(
        execution_key="key-1", arguments_digest=digest, run_id="run-1", tool_call_id="call-1",
        tool_name="deploy_release", owner=owner, lease_seconds=30, redispatch=redispatch,
    )  # fmt: skip


async def test_fresh_then_recorded_result_is_reused(store: SqliteStore) -> None:
    first = await claim(store)
    assert first == Fresh(lease_token=1, attempt=1)
    await store.ledger_record_result(
        execution_key="key-1", lease_token=1, result="deployed", is_error=False
    )
    assert await claim(store, owner="w2") == Recorded(result="deployed", is_error=False)
    assert await claim(store, owner="w2", redispatch=True) == Recorded(
        result="deployed", is_error=False
    )


async def test_same_key_other_arguments_is_refused(store: SqliteStore) -> None:
    await claim(store)
    with pytest.raises(ExecutionKeyConflict, match="other arguments"):
        await claim(store, digest="d2")


async def test_live_lease_of_another_owner_is_held(store: SqliteStore, clock: Clock) -> None:
    await claim(store, owner="w1")
    with pytest.raises(LeaseHeldError, match="w1"):
        await claim(store, owner="w2", redispatch=True)
    clock.advance(29)
    with pytest.raises(LeaseHeldError):
        await claim(store, owner="w2")


async def test_expired_lease_is_interrupted_then_taken_over_and_fenced(
    store: SqliteStore, clock: Clock
) -> None:
    await claim(store, owner="w1")
    clock.advance(31)

    assert await claim(store, owner="w2") == Interrupted(attempt=1)
    takeover = await claim(store, owner="w2", redispatch=True)
    assert takeover == Fresh(lease_token=2, attempt=2)

    with pytest.raises(LeaseLostError, match="nothing was written"):
        await store.ledger_record_result(
            execution_key="key-1", lease_token=1, result="stale", is_error=False
        )
    await store.ledger_record_result(
        execution_key="key-1", lease_token=2, result="deployed", is_error=False
    )
    assert await claim(store, owner="w3") == Recorded(result="deployed", is_error=False)


async def test_same_owner_reclaiming_is_interrupted(store: SqliteStore) -> None:
    await claim(store, owner="w1")
    assert await claim(store, owner="w1") == Interrupted(attempt=1)


async def test_uncertain_waits_for_a_human(store: SqliteStore) -> None:
    await claim(store)
    await store.ledger_mark_uncertain(execution_key="key-1")

    assert await claim(store, owner="w2") == Uncertain()
    with pytest.raises(LeaseLostError):
        await store.ledger_record_result(
            execution_key="key-1", lease_token=1, result="late", is_error=False
        )
    await store.ledger_resolve_with_result(execution_key="key-1", result="verified by ops")
    assert await claim(store, owner="w2") == Recorded(result="verified by ops", is_error=False)
    with pytest.raises(ResolutionError, match="succeeded"):
        await store.ledger_resolve_with_result(execution_key="key-1", result="again")


async def test_uncertain_may_be_retried_by_a_human(store: SqliteStore) -> None:
    await claim(store)
    await store.ledger_mark_uncertain(execution_key="key-1")
    assert await claim(store, owner="w2", redispatch=True) == Fresh(lease_token=3, attempt=2)


async def test_errors_are_recorded_terminal_or_retryable(store: SqliteStore) -> None:
    await claim(store)
    await store.ledger_record_result(
        execution_key="key-1", lease_token=1, result="timeout", is_error=True, retryable=True
    )
    retry = await claim(store, owner="w2")
    assert retry == Fresh(lease_token=2, attempt=2)
    await store.ledger_record_result(
        execution_key="key-1", lease_token=2, result="bad request", is_error=True
    )
    assert await claim(store, owner="w3") == Recorded(result="bad request", is_error=True)


async def test_unknown_keys_are_named(store: SqliteStore) -> None:
    with pytest.raises(UnknownCallError):
        await store.ledger_mark_uncertain(execution_key="nope")
    with pytest.raises(UnknownCallError):
        await store.ledger_resolve_with_result(execution_key="nope", result="x")
    with pytest.raises(LeaseLostError, match="no ledger entry"):
        await store.ledger_record_result(
            execution_key="nope", lease_token=1, result="x", is_error=False
        )


def ops_agent(effects: list[dict[str, Any]]) -> Agent:
    @tool(needs_approval=True, replay_policy="idempotent")
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release of a service."""
        effects.append({"service": service, "version": version})
        return f"deployed {service} {version}"

    return Agent(
        name="ops",
        instructions="Deploy carefully.",
        tools=[deploy_release],
        model=ScriptedModel(
            [[("deploy_release", {"service": "api", "version": "1.4.2"})], "finished"]
        ),
    )


async def test_one_approved_state_resumed_by_two_workers_runs_once(
    database_url: str, keyring: KeyRing
) -> None:
    effects: list[dict[str, Any]] = []
    agent = ops_agent(effects)
    paused = (await Runner.arun(agent, "deploy api")).to_state()
    paused.approve(paused.get_interruptions()[0], approver_id="U-A", reason="ok")
    approved_json = paused.to_json()
    worker_a = await open_store(database_url, keyring=keyring, environ={})
    worker_b = await open_store(database_url, keyring=keyring, environ={})
    try:
        first = await Runner.arun(
            agent, RunState.from_json(approved_json), journal=StoreJournal(worker_a, owner="a")
        )
        second = await Runner.arun(
            agent, RunState.from_json(approved_json), journal=StoreJournal(worker_b, owner="b")
        )
    finally:
        await worker_a.close()
        await worker_b.close()

    assert effects == [{"service": "api", "version": "1.4.2"}]
    assert first.final_output == second.final_output == "finished"


async def test_mark_uncertain_does_not_fence_a_worker_that_took_over(
    store: SqliteStore, clock: Clock
) -> None:
    await claim(store, owner="w1")
    clock.advance(31)
    assert await claim(store, owner="w1") == Interrupted(attempt=1)
    takeover = await claim(store, owner="w2", redispatch=True)  # w2 got there first
    journal_w1 = StoreJournal(store, owner="w1", lease_seconds=30)

    with pytest.raises(LeaseHeldError, match="w2"):
        await journal_w1.mark_uncertain(execution_key="key-1")
    await store.ledger_record_result(
        execution_key="key-1",
        lease_token=takeover.lease_token,
        result="ok",
        is_error=False,
    )
    assert await claim(store, owner="w3") == Recorded(result="ok", is_error=False)
