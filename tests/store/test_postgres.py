"""What only Postgres has: several processes on one database at once.

Each writer is a real `python` process with its own pool, on a database created for the
test and dropped after it. The audit chain must come out as one valid chain, and each
approval every writer raced for must be decided exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator

import pytest

from store import open_store
from store.crypto import KeyRing
from store.keys import format_key, generate_key
from store.records import NewApproval
from tests.store.postgres_db import fresh_postgres_database

WRITERS = 3
ROUNDS = 25
SHARED = 10


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


async def _shared_approvals(url: str, keyring: KeyRing) -> None:
    store = await open_store(url, keyring=keyring, environ={})
    try:
        await store.create_run(
            run_id="shared", agent_name="ops", agent_version="1", schema_version="1.0",
            state_json="{}", status="paused",
        )  # fmt: skip
        await store.add_approvals(
            [
                NewApproval(
                    approval_id=f"shared-{n}",
                    run_id="shared",
                    tool_call_id=f"c{n}",
                    tool_name="deploy",
                    arguments_digest="d" * 64,
                    snapshot="{}",
                    requester="U-REQ",
                    expires_at=None,
                )
                for n in range(SHARED)
            ]
        )
    finally:
        await store.close()


async def _writer(url: str, keyring: KeyRing, name: str) -> dict[str, int]:
    env = {**os.environ, "APPROVALS_KEYS": ",".join(format_key(k) for k in keyring)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.store.concurrent_writer", url, name, str(ROUNDS),
        str(SHARED), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    result: dict[str, int] = json.loads(out)
    return result


async def test_writers_in_several_processes_keep_one_chain_and_decide_once(
    postgres_url: str,
) -> None:
    keyring = KeyRing([generate_key("k1")])
    await _shared_approvals(postgres_url, keyring)

    results = await asyncio.gather(
        *(_writer(postgres_url, keyring, f"w{n}") for n in range(WRITERS))
    )

    assert sum(result["won"] for result in results) == SHARED
    store = await open_store(postgres_url, keyring=keyring, environ={})
    try:
        verification = await store.verify_audit()
        events = await store.audit_events()
        decided = await store.list_approvals(run_id="shared", status="approved")
    finally:
        await store.close()
    assert verification.ok, verification
    # per writer and round: requested, decided (vote), note; plus the shared decisions
    assert verification.checked == len(events) == SHARED + WRITERS * ROUNDS * 3 + SHARED
    assert [event.seq for event in events] == list(range(1, len(events) + 1))
    assert len(decided) == SHARED
