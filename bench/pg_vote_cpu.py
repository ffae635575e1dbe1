"""CPU per Postgres vote, the client's and the server's, in one process: where a vote's
time goes on a machine too noisy for rates to tell.

    python bench/pg_vote_cpu.py [--url postgresql://postgres@127.0.0.1:5432/postgres]
                                [--count 3000] [--concurrency 16] [--rounds 2]

On a database of its own (created for the run, dropped after it), each kind decides
`--count` approvals with `--concurrency` tasks, and prints per decision the CPU time of
this process (time.process_time) and of the database's server processes (user + system
time from /proc of the backends pg_stat_activity lists for the database: a server on
this machine only):

- approvals_cas: the raw conditional UPDATE on the store's `approvals` table (the
  target's yardstick in bench/pg_decisions.py);
- vote_sql: the vote's statement sent by raw asyncpg (bench/pg_decisions.py's), its
  events left queued;
- link: linking those queued events into the chain (the store's sequencer does it
  behind the writers), per event;
- vote: `store.vote()`, the sequencer linking behind it as in production.

CPU time is what two processes and the server share on a small machine, so the sums say
how far one kind's rate can get from another's when the CPU is the bound (the rates are
bench/pg_decisions.py's). The lowest of the rounds is printed, and each sum as a ratio
of approvals_cas's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pg_decisions as bench

from store import open_store
from store.crypto import KeyRing
from store.keys import generate_key


def server_cpu(pids: list[int]) -> float | None:
    """Seconds of CPU these server processes have used; None off this machine."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


async def timed(admin: Any, database: str, work: Any) -> tuple[float, float | None]:
    """(client CPU seconds, server CPU seconds) of awaiting `work()`; its connections
    must still be open when it returns (a closed one's CPU is gone from /proc)."""
    before = await backends(admin, database)
    server = server_cpu(before)
    client = time.process_time()
    await work()
    client = time.process_time() - client
    after = server_cpu(await backends(admin, database))  # a pool's new ones: all theirs
    return client, None if server is None or after is None else after - server


async def backends(admin: Any, database: str) -> list[int]:
    rows = await admin.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", database)
    return [row["pid"] for row in rows]


async def one_round(
    args: argparse.Namespace, admin: Any, database: str, url: str
) -> dict[str, tuple[float, float | None]]:
    keyring = KeyRing([generate_key("bench")])
    found = {}
    for kind in ("approvals_cas", "vote_sql", "vote"):
        prefix = f"{kind}-{secrets.token_hex(3)}"
        await bench.prepare(url, keyring, kind, [prefix], args.count)
        ids = [f"{prefix}-{n}" for n in range(args.count)]
        if kind != "vote":  # no store open meanwhile: its sequencer would link them
            found[kind] = await raw_votes(admin, database, url, kind, ids, args.concurrency)
        if kind == "approvals_cas":
            continue
        store = await open_store(
            url, keyring=keyring, environ={"APPROVALS_PG_POOL_SIZE": str(args.concurrency)}
        )
        try:
            if kind == "vote_sql":
                found["link"] = await timed(admin, database, store.audit_head)
            else:
                found[kind] = await store_votes(admin, database, store, ids, args.concurrency)
        finally:
            await store.close()
    return found


async def store_votes(
    admin: Any, database: str, store: Any, ids: list[str], workers: int
) -> tuple[float, float | None]:
    async def vote(approval_id: str) -> None:
        voted = await store.vote(
            approval_id, decision="approved", voter="U1", digest=bench.DIGEST, reason="bench"
        )
        assert voted.result == "decided"

    await bench.warm(store, workers)
    return await timed(admin, database, lambda: bench.spread(ids, workers, vote))


async def raw_votes(
    admin: Any, database: str, url: str, kind: str, ids: list[str], workers: int
) -> tuple[float, float | None]:
    pool = await asyncpg.create_pool(url, min_size=workers, max_size=workers, reset=bench._no_reset)
    seal = secrets.token_hex(32)

    async def decide(approval_id: str) -> None:
        if kind == "approvals_cas":
            won = await pool.fetchval(bench.APPROVALS_CAS, "U1", bench.AT, approval_id)
            assert won is not None
            return
        row = await pool.fetchrow(
            bench.VOTE_SQL, "U1", "bench", bench.AT, approval_id, bench.DIGEST, seal,
            bench.VOTE_DETAIL,
        )  # fmt: skip
        assert row is not None

    try:
        return await timed(admin, database, lambda: bench.spread(ids, workers, decide))
    finally:
        await pool.close()


def us(seconds: float | None, count: int) -> str:
    return "n/a" if seconds is None else f"{seconds / count * 1e6:5.0f} us"


async def run(args: argparse.Namespace) -> None:
    database = f"ab_bench_vote_cpu_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(args.url)
    await admin.execute(f'CREATE DATABASE "{database}"')
    url = bench.with_database(args.url, database)
    best: dict[str, tuple[float, float | None]] = {}
    try:
        for _ in range(args.rounds):
            for kind, (client, server) in (await one_round(args, admin, database, url)).items():
                was = best.get(kind)
                if was is None or client + (server or 0) < was[0] + (was[1] or 0):
                    best[kind] = (client, server)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.close()
    print(
        f"{args.count} decisions, {args.concurrency} tasks, one process; CPU per decision "
        "(Nx: approvals_cas's sum / this sum, the rate ratio where CPU is the bound):"
    )
    for kind in ("approvals_cas", "vote_sql", "link", "vote"):
        client, server = best[kind]
        total = None if server is None else client + server
        base = best["approvals_cas"]
        ratio = "" if total is None or base[1] is None else f"  {(base[0] + base[1]) / total:.2f}x"
        print(
            f"  {kind:13s} client {us(client, args.count)}  server {us(server, args.count)}  "
            f"sum {us(total, args.count)}{ratio if kind != 'link' else ''}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("APPROVALS_TEST_PG_URL", bench.DEFAULT_URL))
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
