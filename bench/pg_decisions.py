"""Decisions/s through the store on Postgres, one and two processes, against a raw CAS.

    python bench/pg_decisions.py [--url postgresql://postgres@127.0.0.1:5432/postgres]
                                 [--count 3000] [--concurrency 16] [--rounds 2]

On a database of its own (created for the run, dropped after it), with the same number
of processes and of concurrent tasks per process (`--concurrency`, each process with a
pool of that many connections):

- raw CAS (the floor): `UPDATE cas_floor SET status = 'approved', ... WHERE approval_id =
  $1 AND status = 'pending' RETURNING approval_id`, one autocommit statement per
  decision on a table of small rows: no audit, no records;
- approvals_cas: the same raw conditional UPDATE on the store's own `approvals` table
  (its row, its nine indexes), alone: what the schema costs before anything the store
  adds (no vote, no audit, no records), to tell the two apart;
- vote_sql: the statement `store.vote()` sends, written out and sent by raw asyncpg with
  its parameters made in advance (the conditional UPDATE returning the approval's row,
  the vote's INSERT with its seal, the queued `decided` event's INSERT, as one
  data-modifying WITH), and its events never linked: what the vote costs the server
  alone, so `vote / vote_sql` is what the store adds (its Python, the seal, the
  records, the pool, the sequencer linking the chain) and `vote_sql / approvals_cas`
  what the vote's writes cost beyond the decision's own;
- vote: `store.vote()` on a PostgresStore, what a click on Approve makes the service
  call (an approval that needs one approver): the conditional update that closes it, the
  sealed vote and the `decided` audit event, one statement (the event is queued with it;
  the process's sequencer links the chain behind the writers), the records built;
- decide: `store.decide()`, the store's bare decision, which the service does not call:
  the conditional update, its decider's sealed vote and its event in one transaction
  (printed for comparison; the targets are the vote's).

Each process decides `--count` approvals of its own, all processes started together
(they wait for a go after connecting); the rate is all decisions over the time from the
first start to the last end. The kinds take turns in rounds; the best round of each is
printed, with the store's rate as a ratio of the floor's at the same number of processes.
Targets, for the vote: with two processes >= 1,000 decisions/s, >= 0.5x the floor and
>= 0.6x approvals_cas (the raw compare-and-set on the store's own table).
Exits 1 when a target is missed. Each store round ends with the audit chain linked and
verified, every decision in it once (not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg

from store import open_store
from store.crypto import KeyRing
from store.keys import format_key, generate_key
from store.records import NewApproval

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
CAS = (
    "UPDATE cas_floor SET status = 'approved', decider = $1, decided_at = $2 "
    "WHERE approval_id = $3 AND status = 'pending' RETURNING approval_id"
)
AT = "2026-11-29T12:00:00.000000Z"
DIGEST = "d" * 64
KINDS = ("floor", "approvals_cas", "vote_sql", "vote", "decide")
RAW = ("floor", "approvals_cas", "vote_sql")  # raw asyncpg, no store
APPROVALS_CAS = (
    "UPDATE approvals SET status = 'approved', decider = $1, decided_at = $2 "
    "WHERE approval_id = $3 AND status = 'pending' RETURNING approval_id"
)
VOTE_SQL = (
    "WITH changed AS (UPDATE approvals SET status = 'approved', decider = $1, reason = $2, "
    "message = NULL, decided_at = $3 WHERE approval_id = $4 AND status = 'pending' "
    "AND required_approvals = 1 AND arguments_digest = $5 "
    "AND (expires_at IS NULL OR expires_at > $3) AND NOT EXISTS (SELECT 1 FROM "
    "approval_votes v WHERE v.approval_id = $4 AND v.voter = $1 AND v.digest = $5) "
    "RETURNING *), "
    "vote AS (INSERT INTO approval_votes (approval_id, voter, decision, digest, reason, at, "
    "seal_key_id, seal) SELECT approval_id, $1, 'approved', arguments_digest, $2, $3, "
    "'bench', $6 FROM changed), "
    "event AS (INSERT INTO audit_queue (kind, actor, run_id, approval_id, detail, at) "
    "SELECT 'decided', $1, run_id, approval_id, $7, $3 FROM changed) "
    "SELECT * FROM changed"
)
VOTE_DETAIL = json.dumps(
    {"decision": "approved", "digest": "d" * 64, "message": None, "reason": "bench",
     "voters": ["U1"]},
    sort_keys=True, separators=(",", ":"),
)  # fmt: skip
TARGET_RATE = 1000.0
TARGET_RATIO = 0.5
TARGET_TABLE_RATIO = 0.6  # vote / approvals_cas, two processes
SCRIPT = str(Path(__file__).resolve())


def with_database(url: str, name: str) -> str:
    return f"{url.partition('?')[0].rpartition('/')[0]}/{name}"


async def spread(ids: list[str], workers: int, decide: Any) -> tuple[float, float]:
    """(start, end) wall-clock time of deciding `ids` with `workers` tasks."""
    queue = iter(ids)

    async def worker() -> None:
        for approval_id in queue:
            await decide(approval_id)

    start = time.time()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return start, time.time()


async def _no_reset(connection: Any) -> None:
    return None


async def warm(store: Any, workers: int) -> None:
    """Open the store's pool to `workers` connections, as the raw kinds' pools are before
    the go (the store's opens with one and grows on demand: else up to `workers`
    connections, each a backend started and authenticated, would open inside the timed
    window of the store's kinds only)."""
    await asyncio.gather(*(store.get_approval(f"warm-{n}") for n in range(workers)))


async def worker_main(kind: str, url: str, prefix: str, count: int, workers: int) -> None:
    """One process: connect, say ready, wait for go, decide its approvals, report."""
    ids = [f"{prefix}-{n}" for n in range(count)]
    if kind in RAW:
        pool = await asyncpg.create_pool(
            url, min_size=workers, max_size=workers, reset=_no_reset
        )  # as the store's pool: no reset query on release
        cas = CAS if kind == "floor" else APPROVALS_CAS
        seal = secrets.token_hex(32)

        async def decide(approval_id: str) -> None:
            if kind == "vote_sql":
                row = await pool.fetchrow(
                    VOTE_SQL, "U1", "bench", AT, approval_id, DIGEST, seal, VOTE_DETAIL
                )
                assert row is not None
                return
            won = await pool.fetchval(cas, "U1", AT, approval_id)
            assert won is not None

        close = pool.close
    else:
        store = await open_store(url)
        await warm(store, workers)

        async def decide(approval_id: str) -> None:
            if kind == "vote":
                voted = await store.vote(
                    approval_id, decision="approved", voter="U1", digest=DIGEST, reason="bench"
                )
                assert voted.result == "decided"
                return
            outcome = await store.decide(
                approval_id, decision="approved", decider="U1", reason="bench"
            )
            assert outcome.won

        close = store.close
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        start, end = await spread(ids, workers, decide)
    finally:
        await close()
    print(json.dumps({"start": start, "end": end}), flush=True)


async def prepare(url: str, keyring: KeyRing, kind: str, prefixes: list[str], count: int) -> None:
    if kind == "floor":
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(
                "CREATE TABLE IF NOT EXISTS cas_floor (approval_id TEXT PRIMARY KEY, "
                "status TEXT NOT NULL, decider TEXT, decided_at TEXT)"
            )
            for prefix in prefixes:
                await connection.execute(
                    "INSERT INTO cas_floor (approval_id, status) "
                    "SELECT $1 || '-' || n, 'pending' FROM generate_series(0, $2 - 1) AS n",
                    prefix,
                    count,
                )
            await connection.execute("VACUUM ANALYZE cas_floor")
        finally:
            await connection.close()
        return
    store = await open_store(url, keyring=keyring, environ={})
    try:
        for prefix in prefixes:
            await store.create_run(
                run_id=prefix, agent_name="ops", agent_version="1", schema_version="1.0",
                state_json="{}", status="paused",
            )  # fmt: skip
            for first in range(0, count, 500):
                await store.add_approvals(
                    [
                        NewApproval(
                            approval_id=f"{prefix}-{n}",
                            run_id=prefix,
                            tool_call_id=f"c{n}",
                            tool_name="deploy",
                            arguments_digest=DIGEST,
                            snapshot="{}",
                            requester="U0",
                            expires_at=None,
                        )
                        for n in range(first, min(first + 500, count))
                    ]
                )
    finally:
        await store.close()


async def measure(
    url: str, keyring: KeyRing, kind: str, processes: int, count: int, workers: int
) -> float:
    prefixes = [f"{kind}{processes}-{secrets.token_hex(3)}" for _ in range(processes)]
    await prepare(url, keyring, kind, prefixes, count)
    env = {
        **os.environ,
        "APPROVALS_KEYS": ",".join(format_key(key) for key in keyring),
        "APPROVALS_PG_POOL_SIZE": str(workers),
    }
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            SCRIPT,
            "--worker",
            kind,
            "--url",
            url,
            "--prefix",
            prefix,
            "--count",
            str(count),
            "--concurrency",
            str(workers),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        for prefix in prefixes
    ]
    for child in children:
        assert child.stdout is not None
        assert (await child.stdout.readline()).strip() == b"ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        await child.stdin.drain()
    spans = []
    for child in children:
        out, _ = await child.communicate()
        assert child.returncode == 0, f"a {kind} worker failed"
        spans.append(json.loads(out))
    elapsed = max(span["end"] for span in spans) - min(span["start"] for span in spans)
    if kind not in RAW:
        await check_chain(url, keyring, prefixes, count)
    if kind == "vote_sql":  # link its queued events now, not in the next kind's time
        store = await open_store(url, keyring=keyring, environ={})
        try:
            assert (await store.verify_audit()).ok
        finally:
            await store.close()
    return processes * count / elapsed


async def check_chain(url: str, keyring: KeyRing, prefixes: list[str], count: int) -> None:
    """Every decision of the round is in the audit chain once, and the chain verifies."""
    store = await open_store(url, keyring=keyring, environ={})
    try:
        verification = await store.verify_audit()
        assert verification.ok, verification
        for prefix in prefixes:
            events = await store.audit_events(run_id=prefix)
            decided = [e.approval_id for e in events if e.kind == "decided"]
            assert len(decided) == len(set(decided)) == count, (prefix, len(decided))
    finally:
        await store.close()


async def run(args: argparse.Namespace) -> int:
    name = f"ab_bench_decisions_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(args.url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = with_database(args.url, name)
    keyring = KeyRing([generate_key("bench")])
    best: dict[tuple[str, int], float] = {}
    try:
        for _ in range(args.rounds):
            for processes in (1, 2):
                for kind in KINDS:
                    rate = await measure(
                        url, keyring, kind, processes, args.count, args.concurrency
                    )
                    best[kind, processes] = max(best.get((kind, processes), 0.0), rate)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    print(f"{args.count} decisions per process, {args.concurrency} tasks per process")
    missed = []
    for processes in (1, 2):
        floor = best["floor", processes]
        rates = "  ".join(
            f"{kind} {best[kind, processes]:6,.0f}/s {best[kind, processes] / floor:.2f}x"
            for kind in KINDS[1:]
        )
        table = best["approvals_cas", processes]
        print(f"{processes} process(es): raw CAS {floor:6,.0f}/s  {rates}")
        vote, vote_sql = best["vote", processes], best["vote_sql", processes]
        print(
            f"    vote / approvals_cas: {vote / table:.2f}x   vote_sql / approvals_cas: "
            f"{vote_sql / table:.2f}x   vote / vote_sql: {vote / vote_sql:.2f}x"
        )
    for kind in ("vote",):
        rate, floor = best[kind, 2], best["floor", 2]
        if rate < TARGET_RATE:
            missed.append(f"{kind}, two processes: {rate:,.0f}/s < {TARGET_RATE:,.0f}/s")
        if rate / floor < TARGET_RATIO:
            missed.append(f"{kind}, two processes: {rate / floor:.2f}x < {TARGET_RATIO}x floor")
        table = best["approvals_cas", 2]
        if rate / table < TARGET_TABLE_RATIO:
            missed.append(
                f"{kind}, two processes: {rate / table:.2f}x < {TARGET_TABLE_RATIO}x approvals_cas"
            )
    for line in missed:
        print(f"MISSED {line}")
    return 1 if missed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("APPROVALS_TEST_PG_URL", DEFAULT_URL))
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker_main(args.worker, args.url, args.prefix, args.count, args.concurrency))
        return
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
