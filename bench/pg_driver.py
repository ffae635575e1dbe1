"""Which Postgres driver: asyncpg or psycopg 3 (async), on a raw compare-and-set.

    python bench/pg_driver.py [--url postgresql://postgres@127.0.0.1:5432/postgres]
                              [--count 4000] [--rounds 3]

Each driver runs the same one-statement compare-and-set the store's decisions are built
on, `UPDATE approvals SET status = 'approved', ... WHERE approval_id = $1 AND status =
'pending' RETURNING approval_id`, one autocommit statement per decision, with one
connection (c=1) and with 16 connections working at once (c=16, a pool of 16), on a
database of its own that is created for the run and dropped after it. The drivers take
turns in rounds on a fresh table each time; the best round of each is printed, with
psycopg's rate as a ratio of asyncpg's (the median of the per-round ratios).

`--url` names the server and an existing database to connect to for creating and
dropping the benchmark's own (default: $APPROVALS_TEST_PG_URL, else the local server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import psycopg
import psycopg_pool

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
CAS = (
    "UPDATE approvals SET status = 'approved', decider = $1, decided_at = $2 "
    "WHERE approval_id = $3 AND status = 'pending' RETURNING approval_id"
)
AT = "2026-11-29T12:00:00.000000Z"


def with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


async def fresh_table(url: str, count: int) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(
            "DROP TABLE IF EXISTS approvals; CREATE TABLE approvals ("
            "approval_id TEXT PRIMARY KEY, status TEXT NOT NULL, decider TEXT, decided_at TEXT)"
        )
        await connection.execute(
            "INSERT INTO approvals (approval_id, status) "
            "SELECT 'ap-' || n, 'pending' FROM generate_series(0, $1 - 1) AS n",
            count,
        )
        await connection.execute("VACUUM ANALYZE approvals")
    finally:
        await connection.close()


async def spread(count: int, workers: int, decide: Callable[[int], Awaitable[None]]) -> float:
    """Decisions/s of `count` decisions shared by `workers` tasks."""
    numbers = iter(range(count))

    async def worker() -> None:
        for n in numbers:
            await decide(n)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return count / (time.perf_counter() - start)


async def asyncpg_rate(url: str, count: int, workers: int) -> float:
    await fresh_table(url, count)
    pool = await asyncpg.create_pool(url, min_size=workers, max_size=workers)
    try:

        async def decide(n: int) -> None:
            async with pool.acquire() as connection:
                won = await connection.fetchval(CAS, "U1", AT, f"ap-{n}")
            assert won is not None

        return await spread(count, workers, decide)
    finally:
        await pool.close()


async def psycopg_rate(url: str, count: int, workers: int) -> float:
    await fresh_table(url, count)
    sql = CAS.replace("$1", "%s").replace("$2", "%s").replace("$3", "%s")
    pool = psycopg_pool.AsyncConnectionPool(
        url, min_size=workers, max_size=workers, kwargs={"autocommit": True}, open=False
    )
    await pool.open(wait=True)
    try:

        async def decide(n: int) -> None:
            async with pool.connection() as connection:
                cursor = await connection.execute(sql, ("U1", AT, f"ap-{n}"), prepare=True)
                won = await cursor.fetchone()
            assert won is not None

        return await spread(count, workers, decide)
    finally:
        await pool.close()


async def measure(url: str, count: int, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workers in (1, 16):
        best = {"asyncpg": 0.0, "psycopg": 0.0}
        ratios = []
        for _ in range(rounds):
            fast = await asyncpg_rate(url, count, workers)
            slow = await psycopg_rate(url, count, workers)
            best["asyncpg"] = max(best["asyncpg"], fast)
            best["psycopg"] = max(best["psycopg"], slow)
            ratios.append(slow / fast)
        results[f"c={workers}"] = {**best, "psycopg/asyncpg": statistics.median(ratios)}
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("APPROVALS_TEST_PG_URL", DEFAULT_URL))
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    name = f"ab_bench_driver_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(args.url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        results = await measure(with_database(args.url, name), args.count, args.rounds)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    print(f"asyncpg {asyncpg.__version__}, psycopg {psycopg.__version__}; {args.count} CAS/round")
    for level, rates in results.items():
        print(
            f"{level:>5}: asyncpg {rates['asyncpg']:8,.0f}/s  psycopg {rates['psycopg']:8,.0f}/s"
            f"  psycopg/asyncpg {rates['psycopg/asyncpg']:.2f}x"
        )


if __name__ == "__main__":
    asyncio.run(main())
