"""A fresh Postgres database per test: created through APPROVALS_TEST_PG_URL (a database
on the server to connect to; default: the local server's `postgres`, trust auth, user
postgres), dropped when the test ends. Unreachable server: the test skips with the
reason, or fails under CI (`CI` set), where Postgres is part of the job."""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any, TypeVar

import pytest

TEST_URL_ENV = "APPROVALS_TEST_PG_URL"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
PREFIX = "ab_test_"
T = TypeVar("T")


def admin_url() -> str:
    return os.environ.get(TEST_URL_ENV, "").strip() or DEFAULT_ADMIN_URL


def prefix() -> str:
    """Per-test database names start with the name of the database the tests were given
    when it is one of ours (.ci/run drops them all with it), else `ab_test_`."""
    given = admin_url().partition("?")[0].rpartition("/")[2]
    return f"{given}_t" if given.startswith("ab_") else PREFIX


def url_of(database: str) -> str:
    base, _, _ = admin_url().partition("?")
    return f"{base.rpartition('/')[0]}/{database}"


@cache
def unreachable_reason() -> str | None:
    """Why Postgres cannot be used (None when it can), asked once per session."""
    try:
        import asyncpg
    except ImportError as error:
        return f"asyncpg is not installed ({error}): pip install -e '.[dev]'"

    async def probe() -> None:
        connection = await asyncpg.connect(admin_url(), timeout=5)
        await connection.close()

    try:
        asyncio.run(probe())
    except (TimeoutError, OSError, asyncpg.PostgresError) as error:
        return f"Postgres at {admin_url()} is unreachable: {error}"
    return None


def require_postgres() -> None:
    reason = unreachable_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (set {TEST_URL_ENV}; under CI Postgres must be there)")
    pytest.skip(f"{reason} (set {TEST_URL_ENV} to test the Postgres engine)")


def admin_execute(sql: str) -> None:
    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(admin_url(), timeout=10)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(run())


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """The URL of a new empty database, dropped (connections and all) on the way out."""
    require_postgres()
    name = f"{prefix()}{secrets.token_hex(6)}"
    admin_execute(f'CREATE DATABASE "{name}"')
    try:
        yield url_of(name)
    finally:
        admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class RawPostgres:
    """A plain connection to the database, as someone with its credentials has: the same
    calls as sqlite3's (`execute(sql, params)` and its `fetchone`/`fetchall`), with `?`
    placeholders, run on a thread of its own so that sync tamper helpers work inside
    async tests."""

    def __init__(self, url: str) -> None:
        import asyncpg

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._connection = self._call(asyncpg.connect(url, timeout=10))

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> RawRows:
        import asyncpg

        from store.postgres.dialect import postgres_sql

        text = postgres_sql(sql.replace("x'00'", "'\\x00'::bytea"))
        try:
            return RawRows(self._call(self._connection.fetch(text, *params)))
        except asyncpg.PostgresError as error:
            raise RawRefused(str(error)) from error

    def executescript(self, sql: str) -> None:
        self._call(self._connection.execute(sql))

    def drop_trigger(self, name: str, table: str) -> None:
        self.execute(f"DROP TRIGGER {name} ON {table}")

    def close(self) -> None:
        self._call(self._connection.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class RawRefused(Exception):
    """The database refused a raw statement (a trigger or constraint), on any engine."""


class RawRows:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = [tuple(row) for row in rows]

    def fetchone(self) -> Any:  # as sqlite3's: a row, or None when there is none
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)
