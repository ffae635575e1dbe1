"""Transaction bodies every backend runs: generators of SQL statements.

A write transaction is written once, as a generator that yields `Statement`s and gets
each one's result sent back (`row = yield one(sql, params)`), and returns its outcome.
It does no I/O itself, so each backend drives it its own way: SQLite whole on its writer
thread (one hand-off per transaction), Postgres statement by statement on a pooled
connection. The rules stay in one place and both backends run the same SQL.

The SQL is written once too, in the dialect both backends share, with two marks each
backend reads its own way (`store.sqlite.statements`, `store.postgres.dialect`):
- `?` placeholders (Postgres numbers them `$1, $2 ...`);
- `FOR UPDATE` on a read whose row the transaction goes on to change: Postgres locks the
  row (other writers wait, so the read stays true until commit); SQLite drops it, its
  writer already holds the whole database (`BEGIN IMMEDIATE`);
- `FOR UPDATE SKIP LOCKED` on a timer's claim of due rows: Postgres passes over rows
  another transaction holds (another replica's sweep has them); SQLite drops it too;
- `INDEXED BY name` names SQLite's index; Postgres plans on its own and drops it;
- `CAST(column AS BLOB)` reads a sealed blob as bytes in SQLite even if it was rewritten
  as TEXT; Postgres's columns are `bytea` and it reads the column as it is.

A change and the rows it causes can be one statement: `changing(update, *follow_ups)`
is a conditional `UPDATE ... RETURNING` with `FollowUp` INSERTs made for each row it
returns (a vote, an audit event), taking values from the changed row (`FromChanged`).
Postgres sends it as one data-modifying `WITH` (one round trip, and on its own, through
`transact_one`, no BEGIN/COMMIT either); SQLite runs the INSERTs right after the UPDATE
on its writer thread. Either way they commit together or not at all.

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
class FromChanged:
    """A follow-up's value taken from the changed row: its column `column` (which the
    change's RETURNING must name)."""

    column: str


@dataclass(frozen=True, slots=True)
class FollowUp:
    """An INSERT made for each row a change returns, in the same statement."""

    table: str
    columns: tuple[str, ...]
    values: tuple[Any, ...]  # a parameter, or FromChanged(column)


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement of a transaction body, and what it wants back."""

    sql: str
    params: Sequence[Any]
    fetch: Fetch
    then: tuple[FollowUp, ...] = ()  # INSERTs for each returned row (`changing`)


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


def changing(change: Statement, *follow_ups: FollowUp) -> Statement:
    """`change` (an `UPDATE ... RETURNING`) with `follow_ups` inserted for each row it
    returns, all as one statement."""
    return Statement(change.sql, change.params, change.fetch, then=follow_ups)


def follow_up_sql(follow_up: FollowUp, source: str) -> tuple[str, list[Any]]:
    """`INSERT INTO table (columns) SELECT ... FROM source`: the follow-up as the
    statement part that reads the changed rows from `source`, and its parameters."""
    picks, params = [], []
    for value in follow_up.values:
        if isinstance(value, FromChanged):
            picks.append(f"{source}.{value.column}")
        else:
            picks.append("?")
            params.append(value)
    sql = (
        f"INSERT INTO {follow_up.table} ({', '.join(follow_up.columns)}) "
        f"SELECT {', '.join(picks)} FROM {source}"
    )
    return sql, params


def follow_up_values(follow_up: FollowUp, changed: Row) -> list[Any]:
    """The follow-up's values for one changed row."""
    return [
        changed[value.column] if isinstance(value, FromChanged) else value
        for value in follow_up.values
    ]


class IntegrityViolation(Exception):
    """A constraint refused a row (unique key, foreign key, check): thrown into the body."""


class Database(Protocol):
    """What the concept parts (store.sql) need from a backend's database."""

    async def transact(self, body: Callable[[], Body[T]]) -> T:
        """Run the body made by `body()` as one write transaction; its outcome."""
        ...

    async def transact_one(self, statement: Statement) -> Any:
        """Run one statement as a write transaction of its own (atomic by itself; one
        round trip where the backend has them); its result as a body would get it. A
        constraint's refusal is StoreError."""
        ...

    async def read(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]:
        """The rows of one query outside any write transaction (the last commit)."""
        ...

    async def read_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...


def placeholders(count: int) -> str:
    """`?, ?, ...`: `count` placeholders for an `IN (...)` list."""
    return ", ".join("?" * count)


def value_rows(rows: int, columns: int) -> str:
    """`(?, ?), (?, ?)`: the VALUES of a multi-row INSERT."""
    row = f"({placeholders(columns)})"
    return ", ".join([row] * rows)


def single(statement: Statement) -> Callable[[], Body[Any]]:
    """A body of the one `statement` (a database's `transact_one` without a faster way)."""

    def body() -> Body[Any]:
        return (yield statement)

    return body
