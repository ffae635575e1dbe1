"""Store throughput: decisions end to end against raw aiosqlite CAS, and state blobs.

    python bench/store_decisions.py          # 7 rounds of 1,000 decisions; 10/100/1,000-item blobs
    python bench/store_decisions.py --quick   # fewer samples
    python bench/store_decisions.py --synchronous NORMAL

Both decision rates run in this process, on fresh database files in the same temporary
directory, with the same pragmas (WAL, the same `synchronous`), one commit per decision,
one decision after the other:

- raw CAS (the floor): a bare aiosqlite connection doing
  `BEGIN IMMEDIATE; UPDATE approvals SET status=... WHERE id=? AND status='pending'; COMMIT`
  on a table of small rows, with no audit, no records, no error handling;
- store: `SqliteStore.decide()`: the conditional update with RETURNING, the `decided`
  audit event (read the chain head, hash, insert) in the same transaction, the record
  built, the write lock and the hand-off to the writer thread around it;
- store.vote (the service's write path), quorum 1: read the row, insert the vote, tally
  the votes (store.sql.votes.tally), the conditional update and the `decided` event, in
  the same one transaction.

Blobs: `create_run` / `save_run_state` (seal + write) and `load_run_state` (read + open +
digest check) for states of 10, 100 and 1,000 history items.

Targets: >= 1,000 decisions/s end to end and >= 0.5x the raw CAS rate.
Wall-clock rates on a possibly busy machine: the two are measured interleaved in rounds;
the best round of each is reported, and the ratio is the median of the per-round ratios.
Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite

from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import NewApproval
from store.sqlite.opening import Synchronous

ITEM_SIZES = (10, 100, 1000)
TARGET_RATE = 1000.0
TARGET_RATIO = 0.5


async def raw_cas_rate(path: Path, count: int, synchronous: Synchronous) -> float:
    connection = await aiosqlite.connect(path, isolation_level=None)
    try:
        await connection.execute("PRAGMA journal_mode=WAL")
        await connection.execute(f"PRAGMA synchronous={synchronous}")
        await connection.execute(
            "CREATE TABLE approvals (id TEXT PRIMARY KEY, status TEXT NOT NULL, "
            "decider TEXT, decided_at TEXT)"
        )
        await connection.executemany(
            "INSERT INTO approvals (id, status) VALUES (?, 'pending')",
            [(f"ap-{n}",) for n in range(count)],
        )
        start = time.perf_counter()
        for n in range(count):
            await connection.execute("BEGIN IMMEDIATE")
            await connection.execute(
                "UPDATE approvals SET status = 'approved', decider = ?, decided_at = ? "
                "WHERE id = ? AND status = 'pending'",
                ("U1", "2026-11-29T12:00:00.000000Z", f"ap-{n}"),
            )
            await connection.execute("COMMIT")
        return count / (time.perf_counter() - start)
    finally:
        await connection.close()


async def store_at(path: Path, synchronous: Synchronous) -> SqliteStore:
    return await open_store(
        str(path), keyring=KeyRing([generate_key("bench")]), synchronous=synchronous, environ={}
    )


async def store_decide_rate(
    path: Path, count: int, synchronous: Synchronous, *, by_vote: bool = False
) -> float:
    store = await store_at(path, synchronous)
    try:
        await store.create_run(
            run_id="run", agent_name="ops", agent_version="1", schema_version="1.0",
            state_json="{}", status="paused",
        )  # fmt: skip
        await store.add_approvals(
            [
                NewApproval(
                    approval_id=f"ap-{n}",
                    run_id="run",
                    tool_call_id=f"call-{n}",
                    tool_name="deploy",
                    arguments_digest="d" * 64,
                    snapshot="{}",
                    requester="U0",
                    expires_at=None,
                )
                for n in range(count)
            ]
        )
        start = time.perf_counter()
        for n in range(count):
            if by_vote:
                voted = await store.vote(
                    f"ap-{n}", decision="approved", voter="U1", digest="d" * 64, reason="bench"
                )
                assert voted.result == "decided"
            else:
                outcome = await store.decide(
                    f"ap-{n}", decision="approved", decider="U1", reason="bench"
                )
                assert outcome.won
        elapsed = time.perf_counter() - start
        assert (await store.verify_audit()).ok
        return count / elapsed
    finally:
        await store.close()


def state_with(items: int) -> str:
    history = [
        {
            "type": "tool_result",
            "tool_call_id": f"call_{n}",
            "name": "get_status",
            "content": "api: healthy, 3/3 replicas ready, p99 41ms, last deploy 1.4.1",
            "is_error": False,
        }
        for n in range(items)
    ]
    return json.dumps({"$schemaVersion": "1.0", "run_id": "r", "history": history})


async def per_op(action: Callable[[int], Awaitable[object]], number: int) -> float:
    start = time.perf_counter()
    for n in range(number):
        await action(n)
    return (time.perf_counter() - start) / number


async def blob_rows(directory: Path, synchronous: Synchronous, number: int) -> list[str]:
    store = await store_at(directory / "blobs.db", synchronous)
    rows = []
    try:
        for items in ITEM_SIZES:
            state = state_with(items)
            run_id = f"run-{items}"
            await store.create_run(
                run_id=run_id, agent_name="ops", agent_version="1", schema_version="1.0",
                state_json=state, status="paused",
            )  # fmt: skip
            version = 1

            async def save(_: int, run_id: str = run_id, state: str = state) -> None:
                nonlocal version
                record = await store.save_run_state(
                    run_id, expected_version=version, state_json=state, status="paused",
                    schema_version="1.0",
                )  # fmt: skip
                version = record.version

            async def load(_: int, run_id: str = run_id) -> None:
                await store.load_run_state(run_id)

            write = await per_op(save, number)
            read = await per_op(load, number)
            rows.append(
                f"{items:>6} items {len(state) / 1024:>8.1f} KiB   "
                f"write {write * 1e3:7.3f} ms   read {read * 1e3:7.3f} ms"
            )
    finally:
        await store.close()
    return rows


async def decision_rounds(
    directory: Path, count: int, rounds: int, synchronous: Synchronous
) -> tuple[list[float], list[float], list[float]]:
    """Raw, store.decide and store.vote rates, interleaved round by round on fresh files."""
    raw_rates, store_rates, vote_rates = [], [], []
    for number in range(rounds):
        raw_rates.append(await raw_cas_rate(directory / f"raw-{number}.db", count, synchronous))
        store_rates.append(
            await store_decide_rate(directory / f"store-{number}.db", count, synchronous)
        )
        vote_rates.append(
            await store_decide_rate(
                directory / f"vote-{number}.db", count, synchronous, by_vote=True
            )
        )
    return raw_rates, store_rates, vote_rates


async def main(quick: bool, synchronous: Synchronous) -> int:
    count = 500 if quick else 1000
    rounds = 3 if quick else 7
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        directory = Path(tmp)
        raw_rates, store_rates, vote_rates = await decision_rounds(
            directory, count, rounds, synchronous
        )
        blobs = await blob_rows(directory, synchronous, 20 if quick else 100)
    raw_best, store_best, vote_best = max(raw_rates), max(store_rates), max(vote_rates)
    # each round's ratio pairs measurements taken seconds apart; the median resists a
    # busy machine slowing one side of a single round
    ratio = statistics.median(s / r for s, r in zip(store_rates, raw_rates, strict=True))
    vote_ratio = statistics.median(v / r for v, r in zip(vote_rates, raw_rates, strict=True))
    print(f"synchronous={synchronous}, {rounds} interleaved rounds of {count} decisions")
    print(f"raw aiosqlite CAS        best {raw_best:>7.0f} decisions/s")
    print(f"store.decide end to end  best {store_best:>7.0f} decisions/s")
    print(f"store.vote (quorum 1)    best {vote_best:>7.0f} decisions/s")
    print(f"store / raw, median of per-round ratios: {ratio:.2f}x (vote: {vote_ratio:.2f}x)")
    print(f"targets: >= {TARGET_RATE:.0f}/s and >= {TARGET_RATIO}x raw")
    print("state blobs (seal+write / read+open), per operation:")
    for row in blobs:
        print("  " + row)
    met = min(store_best, vote_best) >= TARGET_RATE and min(ratio, vote_ratio) >= TARGET_RATIO
    print("targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL")
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.quick, options.synchronous)))
