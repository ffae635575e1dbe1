"""Transaction bodies every engine runs: generators of SQL statements.

A write transaction is written once, as a generator that yields `Statement`s and gets
each one's result sent back (`row = yield one(sql, params)`), and returns its outcome.
It does no I/O itself, so each engine drives it its own way: SQLite whole on its writer
thread (one hand-off per transaction), Postgres statement by statement on a pooled
connection. The rules stay in one place and both engines run the same SQL.

The SQL is written once too, in the dialect both engines share, with two marks each
engine reads its own way (`store.sqlite.connection`, `store.postgres.dialect`):
- `?` placeholders (Postgres numbers them `$1, $2 ...`);
- `FOR UPDATE` on a read whose row the transaction goes on to change: Postgres locks the
  row (other writers wait, so the read stays true until commit); SQLite drops it, its
  writer already holds the whole database (`BEGIN IMMEDIATE`);
- `INDEXED BY name` names SQLite's index; Postgres plans on its own and drops it;
- `CAST(column AS BLOB)` reads a sealed blob as bytes in SQLite even if it was rewritten
  as TEXT; Postgres's columns are `bytea` and it reads the column as it is.

A constraint that refuses a row (a unique or foreign key) reaches the body as
`IntegrityViolation`, thrown in at the `yield` of that statement; any other database
error ends the transaction (rolled back) as StoreError.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from store.rows import Row

T = TypeVar("T")
Fetch = Literal["one", "all", "none"]


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement of a transaction body, and what it wants back."""

    sql: str
    params: Sequence[Any]
    fetch: Fetch


Body = Generator[Statement, Any, T]
"""A transaction body: yields statements, gets each result (a row, None, a list of
rows, or None for `run`), returns the transaction's outcome."""


def one(sql: str, params: Sequence[Any] = ()) -> Statement:
    """The first row of `sql` (None when there is none)."""
    return Statement(sql, params, "one")


def many(sql: str, params: Sequence[Any] = ()) -> Statement:
    """Every row of `sql`."""
    return Statement(sql, params, "all")


def run(sql: str, params: Sequence[Any] = ()) -> Statement:
    """Execute `sql`; nothing comes back."""
    return Statement(sql, params, "none")


class IntegrityViolation(Exception):
    """A constraint refused a row (unique key, foreign key, check): thrown into the body."""


class Engine(Protocol):
    """What the concept parts (store.sql) need from an engine's database."""

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the body made by `body()` as one write transaction; its outcome."""
        ...

    async def read(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]:
        """The rows of one query outside any write transaction (the last commit)."""
        ...

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...


def placeholders(count: int) -> str:
    """`?, ?, ...`: `count` placeholders for an `IN (...)` list."""
    return ", ".join("?" * count)
