"""The Postgres connections: one asyncpg pool for write transactions and reads.

A write transaction is a body from store.tx, driven statement by statement on one
pooled connection inside `BEGIN ... COMMIT` (asyncpg's transaction: any exception rolls
it back, a cancelled caller included). The isolation level is Postgres's default, READ
COMMITTED: every transition in the shared SQL is a conditional UPDATE, and a read whose
row the transaction goes on to change says `FOR UPDATE`, so of two racing writers in any
number of processes one waits for the other and then sees its commit. Two transactions
that lock the same rows in opposite orders (a deadlock, which Postgres breaks by failing
one) or a serialization failure are run again from the start, up to `RETRIES` times: a
body is made afresh by its factory each time.

Reads go through the same pool, each one statement outside any transaction (the last
commit). Pool size: `APPROVALS_PG_POOL_SIZE` (default 10) connections per process; each
replica holds up to that many of the server's `max_connections`. A connection the pool
hands out is kept by the store between uses (store.postgres.checkout: asyncpg's acquire
and release cost more client CPU than a vote's statement), and goes back to the pool
after any failure, which reconnects.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import asyncpg

from bot.errors import ConfigError, StoreError
from store.postgres.checkout import Checkout
from store.postgres.dialect import postgres_sql
from store.tx import (
    Body,
    FromChanged,
    IntegrityViolation,
    Statement,
    follow_up_sql,
)

T = TypeVar("T")
POOL_SIZE_ENV = "APPROVALS_PG_POOL_SIZE"
DEFAULT_POOL_SIZE = 10
RETRIES = 5
_RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)
_FAILED = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)
"""What a failed call to the database raises. InternalClientError too: a connection the
server dropped mid-statement (a failover, pg_terminate_backend) is left by asyncpg in a
state where the next statement raises it ("another operation is in progress")."""


def pool_size_from_env(environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    text = env.get(POOL_SIZE_ENV, "").strip()
    if not text:
        return DEFAULT_POOL_SIZE
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise ConfigError(f"{POOL_SIZE_ENV} must be a whole number from 1 to 1000, not {text!r}")
    return int(text)


class PgDatabase:
    """A Postgres database opened for the store: `transact()` writes and `read()` queries."""

    def __init__(self, pool: Any, *, location: str, pool_size: int) -> None:
        self._pool = pool
        self._connections = Checkout(pool, pool_size)  # kept between uses
        self.location = location  # the URL without its password, for messages

    @classmethod
    async def open(cls, dsn: str, *, location: str, pool_size: int) -> PgDatabase:
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=1,
                max_size=pool_size,
                server_settings={"application_name": "approvals-bot"},
                reset=_keep_session,
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise StoreError(f"cannot open database {location}: {error}") from error
        return cls(pool, location=location, pool_size=pool_size)

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the body made by `body()` as one transaction; deadlocks and serialization
        failures run it again from the start."""

        async def in_transaction(connection: Any) -> T:
            async with connection.transaction():
                return await drive(body(), connection)

        for attempt in range(1, RETRIES + 1):
            try:
                return await self._connections.use(in_transaction)
            except _RETRYABLE as error:
                if attempt == RETRIES:
                    raise StoreError(f"write failed on {self.location}: {error}") from error
            except IntegrityViolation as error:
                raise StoreError(f"write failed on {self.location}: {error}") from error
            except _FAILED as error:
                raise StoreError(f"write failed on {self.location}: {error}") from error
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def transact_one(self, statement: Statement) -> Any:
        """One statement in autocommit: its own transaction, in one round trip (no
        BEGIN, no COMMIT); deadlocks and serialization failures run it again."""
        for attempt in range(1, RETRIES + 1):
            try:
                return await self._connections.use(partial(execute, statement=statement))
            except _RETRYABLE as error:
                if attempt == RETRIES:
                    raise StoreError(f"write failed on {self.location}: {error}") from error
            except _FAILED as error:
                raise StoreError(f"write failed on {self.location}: {error}") from error
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            rows: list[Any] = await self._connections.use(
                lambda connection: connection.fetch(postgres_sql(sql), *params)
            )
        except _FAILED as error:
            raise StoreError(f"read failed on {self.location}: {error}") from error
        return rows

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self.read(sql, params)
        return rows[0] if rows else None

    async def connection(self) -> Any:
        """A pooled connection of one's own (migrations, copies); release it with
        `release`."""
        return await self._connections.take()

    async def release(self, connection: Any) -> None:
        await self._connections.give_back(connection)

    async def close(self) -> None:
        await self._connections.close()
        await self._pool.close()


async def _keep_session(connection: Any) -> None:
    """What a connection needs on its way back to the pool: nothing more than asyncpg
    does anyway (it rolls back a transaction left open). asyncpg's default reset sends
    `RESET ALL; UNLISTEN *; CLOSE ALL; SELECT pg_advisory_unlock_all()`: one more round
    trip for every transaction and every read, to undo what the store never does (it
    sets no session state, listens to nothing, keeps no cursor; the one session advisory
    lock, the migration's, is released where it is taken)."""


async def drive(body: Body[T], connection: Any) -> T:
    """Run a transaction body (store.tx) on `connection`, statement by statement; a
    constraint's refusal is thrown into the body as IntegrityViolation."""
    try:
        statement = next(body)
        while True:
            try:
                result = await execute(connection, statement)
            except asyncpg.IntegrityConstraintViolationError as error:
                statement = body.throw(IntegrityViolation(str(error)))
            else:
                statement = body.send(result)
    except StopIteration as done:
        outcome: T = done.value
        return outcome


async def execute(connection: Any, statement: Statement) -> Any:
    sql, params = with_follow_ups(statement)
    if statement.fetch == "one":
        return await connection.fetchrow(sql, *params)
    if statement.fetch == "all" or statement.then:
        rows = await connection.fetch(sql, *params)
        return rows if statement.fetch == "all" else None
    await connection.execute(sql, *params)
    return None


def with_follow_ups(statement: Statement) -> tuple[str, Sequence[Any]]:
    """The statement as Postgres runs it: a change with follow-ups (store.tx.changing)
    becomes one data-modifying WITH whose result is the change's rows. The WITH is
    composed once per shape (the change's SQL, each follow-up's table, columns and which
    values come from the changed row) and remembered; only the parameters are per call."""
    if not statement.then:
        return postgres_sql(statement.sql), statement.params
    params = list(statement.params)
    shape: list[Any] = [statement.sql]
    for follow_up in statement.then:  # one pass: the shape and the parameters
        taken: list[str | None] = []
        for value in follow_up.values:
            if isinstance(value, FromChanged):
                taken.append(value.column)
            else:
                taken.append(None)
                params.append(value)
        shape.append((follow_up.table, follow_up.columns, tuple(taken)))
    key = tuple(shape)
    sql = _COMPOSED.get(key)
    if sql is None:
        sql = _COMPOSED[key] = _compose(statement)
    return sql, params


_COMPOSED: dict[tuple[Any, ...], str] = {}


def _compose(statement: Statement) -> str:
    parts = [f"changed AS ({statement.sql})"]
    for number, follow_up in enumerate(statement.then):
        sql, _values = follow_up_sql(follow_up, "changed")
        parts.append(f"follow_up_{number} AS ({sql})")
    return postgres_sql(f"WITH {', '.join(parts)} SELECT * FROM changed")
