"""The MCP gateway's call keys: one run answers a call, whichever worker claims it first;
a stale run can be replaced; a handed-out result frees the key; old keys are forgotten
only once their run finished (or never came to be)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.errors import InputError
from store import SqliteStore, open_store
from store.crypto import KeyRing
from tests.store.store_helpers import Clock

KEY = "k" * 64


async def test_the_first_claim_wins_and_the_next_is_told_its_run(store: SqliteStore) -> None:
    first = await store.claim_mcp_call(KEY, run_id="run-a")
    second = await store.claim_mcp_call(KEY, run_id="run-b")
    assert (first.won, first.run_id) == (True, "run-a")
    assert (second.won, second.run_id) == (False, "run-a")
    assert second.claimed_at == first.claimed_at


async def test_only_the_run_it_names_can_be_replaced(store: SqliteStore) -> None:
    await store.claim_mcp_call(KEY, run_id="run-a")
    wrong = await store.claim_mcp_call(KEY, run_id="run-c", replacing="run-b")
    assert (wrong.won, wrong.run_id) == (False, "run-a")
    replaced = await store.claim_mcp_call(KEY, run_id="run-c", replacing="run-a")
    assert (replaced.won, replaced.run_id) == (True, "run-c")


async def test_a_release_frees_the_key_only_for_its_own_run(store: SqliteStore) -> None:
    await store.claim_mcp_call(KEY, run_id="run-a")
    assert not await store.release_mcp_call(KEY, run_id="run-b")
    assert await store.release_mcp_call(KEY, run_id="run-a")
    assert not await store.release_mcp_call(KEY, run_id="run-a")
    again = await store.claim_mcp_call(KEY, run_id="run-b")
    assert (again.won, again.run_id) == (True, "run-b")


async def test_old_keys_go_once_their_run_finished_long_ago_or_never_came(
    store: SqliteStore, clock: Clock
) -> None:
    async def run(run_id: str, status: str) -> None:
        await store.create_run(
            run_id=run_id, agent_name="mcp", agent_version="1", schema_version="engine-1",
            state_json="{}", status=status,  # type: ignore[arg-type]
        )  # fmt: skip

    await run("run-open", "paused")
    await run("run-done", "completed")
    for key in ("open", "done", "never", "just-done"):
        await store.claim_mcp_call(key, run_id=f"run-{key}")
    clock.advance(60)
    await run("run-just-done", "completed")  # a long wait that ended just now
    await store.claim_mcp_call("recent", run_id="run-recent")
    assert await store.forget_mcp_calls(before=clock() - timedelta(seconds=30)) == 2
    kept = ("open", "recent", "just-done")
    assert [(await store.claim_mcp_call(key, run_id="other")).won for key in kept] == [False] * 3
    for key in ("done", "never"):
        assert (await store.claim_mcp_call(key, run_id="new")).won


async def test_a_claim_needs_a_key_and_a_run(store: SqliteStore) -> None:
    with pytest.raises(InputError):
        await store.claim_mcp_call("", run_id="run-a")


async def test_racing_claims_over_several_connections_agree_on_one_run(
    database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    stores = [
        await open_store(database_url, keyring=keyring, clock=clock, environ={}) for _ in range(4)
    ]
    try:
        claims = await asyncio.gather(
            *(s.claim_mcp_call(KEY, run_id=f"run-{n}") for n, s in enumerate(stores))
        )
    finally:
        for opened in stores:
            await opened.close()
    assert sum(claim.won for claim in claims) == 1
    assert len({claim.run_id for claim in claims}) == 1
