"""The shared SQL (store.tx) as SQLite runs it: a transaction body driven statement by
statement on a connection, its follow-up inserts, row locks left out.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any, TypeVar

from store.tx import Body, IntegrityViolation, Statement, follow_up_values, placeholders

T = TypeVar("T")
_SQLITE_SQL: dict[str, str] = {}
_ROW_LOCK = re.compile(r" FOR UPDATE(?: SKIP LOCKED)?")


def sqlite_sql(sql: str) -> str:
    """The shared SQL (store.tx) as SQLite runs it: without `FOR UPDATE` or `FOR UPDATE
    SKIP LOCKED`, since the writer holds the whole database for its transaction (`BEGIN
    IMMEDIATE`): no row is ever locked by another transaction, so none is skipped."""
    found = _SQLITE_SQL.get(sql)
    if found is None:
        found = _SQLITE_SQL[sql] = _ROW_LOCK.sub("", sql)
    return found


def drive(body: Body[T], connection: sqlite3.Connection) -> T:
    """Run a transaction body (store.tx) on `connection`, statement by statement; a
    constraint's refusal is thrown into the body as IntegrityViolation."""
    try:
        statement = next(body)
        while True:
            try:
                result = execute(connection, statement)
            except sqlite3.IntegrityError as error:
                statement = body.throw(IntegrityViolation(str(error)))
            else:
                statement = body.send(result)
    except StopIteration as done:
        outcome: T = done.value
        return outcome


def execute(connection: sqlite3.Connection, statement: Statement) -> Any:
    cursor = connection.execute(sqlite_sql(statement.sql), statement.params)
    if statement.then:
        return _follow_up(connection, statement, cursor.fetchall())
    if statement.fetch == "one":
        return cursor.fetchone()
    if statement.fetch == "all":
        return cursor.fetchall()
    return None


def _follow_up(connection: sqlite3.Connection, statement: Statement, changed: list[Any]) -> Any:
    """A change's follow-up INSERTs (store.tx.changing), one per changed row, right after
    it in the same transaction; the change's result."""
    for row in changed:
        for follow_up in statement.then:
            marks = placeholders(len(follow_up.columns))
            connection.execute(
                f"INSERT INTO {follow_up.table} ({', '.join(follow_up.columns)}) VALUES ({marks})",
                follow_up_values(follow_up, row),
            )
    if statement.fetch == "one":
        return changed[0] if changed else None
    return changed if statement.fetch == "all" else None
