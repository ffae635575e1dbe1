"""Migration 0007: approvals unique per (run, execution key), runs that name the engine
that wrote their state and say why they wait for a migration."""

from __future__ import annotations

import dataclasses

import pytest

from bot.errors import InputError
from store import SqliteStore
from store.records import EngineStamp
from tests.store.store_helpers import make_run, new_approval

SDK = EngineStamp(name="openai-agents", version="0.24.0", schema_version="1.21")


async def test_one_call_id_in_two_turns_gets_two_approvals(store: SqliteStore) -> None:
    await make_run(store)
    first = dataclasses.replace(new_approval(call="call_0"), execution_key="a" * 32)
    second = dataclasses.replace(
        new_approval(call="call_0", approval_id="ap-2"), execution_key="b" * 32
    )

    [one] = await store.add_approvals([first])
    [two] = await store.add_approvals([second])
    [again] = await store.add_approvals([dataclasses.replace(second, approval_id="ap-3")])

    assert (one.execution_key, two.execution_key) == ("a" * 32, "b" * 32)
    assert again.approval_id == "ap-2"  # the open approval of that key, as before
    requested = [e for e in await store.audit_events(run_id="run-1") if e.kind == "requested"]
    assert [e.detail["execution_key"] for e in requested] == ["a" * 32, "b" * 32]


async def test_an_approval_without_a_key_is_keyed_by_its_call_as_before(
    store: SqliteStore,
) -> None:
    await make_run(store)
    [row] = await store.add_approvals([new_approval(call="call_7")])
    assert row.execution_key == "call:call_7"
    with pytest.raises(InputError, match="reserved"):
        await store.add_approvals(
            [dataclasses.replace(new_approval(call="x"), execution_key="call:x")]
        )


async def test_the_engine_is_recorded_and_a_migration_need_set_and_cleared(
    store: SqliteStore,
) -> None:
    run = await store.create_run(
        run_id="run-sdk",
        agent_name="ops-openai",
        agent_version="1",
        schema_version="engine-1",
        state_json="{}",
        status="paused",
        engine=SDK,
    )
    assert (run.engine, run.needs_migration) == (SDK, None)

    marked = await store.mark_needs_migration("run-sdk", reason="schema 9.0", actor="svc")
    assert marked is not None
    assert marked.needs_migration == "schema 9.0"
    assert await store.mark_needs_migration("run-sdk", reason="schema 9.0", actor="svc") is None
    saved = await store.save_run_state(
        "run-sdk",
        expected_version=marked.version,
        state_json="{}",
        status="paused",
        schema_version="engine-1",
        engine=SDK,
    )
    assert (saved.engine, saved.needs_migration) == (SDK, None)  # a new state clears it
    kinds = [e.kind for e in await store.audit_events(run_id="run-sdk")]
    assert kinds.count("needs_migration") == 1
    with pytest.raises(InputError):
        await store.mark_needs_migration("nosuch", reason="x", actor="svc")
