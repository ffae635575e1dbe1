"""Group commit on SQLite's writer (store.sqlite.group_commit): write transactions queued
while the writer is busy commit together, each body inside its own savepoint, each
caller answered after the COMMIT that holds its work.

A first body holds the writer (it waits on a threading.Event on the writer thread) while
the others queue behind it, so the group they form is known, not left to timing."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest

from bot.errors import InputError, StoreError
from store.sqlite.connection import Database
from store.tx import Body, one, run
from tests.polling import until


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    opened = await Database.open(tmp_path / "group.db")
    await opened.transaction(
        lambda connection: connection.execute("CREATE TABLE notes (name TEXT PRIMARY KEY)")
    )
    try:
        yield opened
    finally:
        await opened.close()


def insert(name: str) -> Callable[[], Body[int]]:
    def body() -> Body[int]:
        yield run("INSERT INTO notes (name) VALUES (?)", (name,))
        row = yield one("SELECT count(*) FROM notes")
        return int(row[0])

    return body


def insert_then_fail(name: str) -> Callable[[], Body[None]]:
    def body() -> Body[None]:
        yield run("INSERT INTO notes (name) VALUES (?)", (name,))
        raise InputError(f"{name} changes its mind")

    return body


def insert_then_lose_the_transaction(name: str) -> Callable[[], Body[None]]:
    """As SQLite does on an I/O error or a full disk: the whole transaction rolled back
    under the body, which then fails."""

    def body() -> Body[None]:
        yield run("INSERT INTO notes (name) VALUES (?)", (name,))
        yield run("ROLLBACK")
        raise StoreError(f"{name}: disk I/O error")

    return body


def holding(gate: threading.Event, entered: threading.Event) -> Callable[[], Body[None]]:
    def body() -> Body[None]:
        entered.set()
        gate.wait(30)  # on the writer thread: the writes behind it queue meanwhile
        yield run("INSERT INTO notes (name) VALUES ('first')")

    return body


async def names(database: Database) -> set[str]:
    return {str(row[0]) for row in await database.read("SELECT name FROM notes")}


async def queued_behind_a_held_writer(
    database: Database, bodies: Sequence[Callable[[], Body[object]]]
) -> list[object]:
    """Run `bodies` concurrently while a first write holds the writer, so they form one
    group; each caller's outcome (its result or its exception)."""
    gate, entered = threading.Event(), threading.Event()
    first = asyncio.create_task(database.transact(holding(gate, entered)))
    await until(lambda: _true_or_none(entered.is_set()), "the first write holds the writer")
    tasks = [asyncio.create_task(database.transact(body)) for body in bodies]
    await until(
        lambda: _true_or_none(database.waiting_writes == len(bodies)),
        "every write queued behind the first",
    )
    gate.set()
    await first
    return list(await asyncio.gather(*tasks, return_exceptions=True))


async def _true_or_none(value: bool) -> bool | None:
    return True if value else None


async def test_writes_queued_together_commit_and_each_sees_those_before_it(
    database: Database,
) -> None:
    outcomes = await queued_behind_a_held_writer(database, [insert(f"n{i}") for i in range(8)])
    assert outcomes == [2, 3, 4, 5, 6, 7, 8, 9]  # 'first', then one more per body, in order
    assert await names(database) == {"first", *(f"n{i}" for i in range(8))}


async def test_a_failing_body_rolls_back_alone(database: Database) -> None:
    bodies = [insert("a"), insert_then_fail("b"), insert("c")]
    outcomes = await queued_behind_a_held_writer(database, bodies)
    assert outcomes[0] == 2
    assert isinstance(outcomes[1], InputError)
    assert str(outcomes[1]) == "b changes its mind"
    assert outcomes[2] == 3  # 'b' was rolled back before 'c' ran
    assert await names(database) == {"first", "a", "c"}


async def test_a_constraint_failure_is_a_store_error_for_its_caller_only(
    database: Database,
) -> None:
    outcomes = await queued_behind_a_held_writer(database, [insert("x"), insert("x")])
    assert outcomes[0] == 2
    assert isinstance(outcomes[1], StoreError)
    assert "UNIQUE constraint failed" in str(outcomes[1])
    assert await names(database) == {"first", "x"}


async def test_a_transaction_lost_half_way_fails_every_body_in_it(database: Database) -> None:
    bodies = [insert("a"), insert_then_lose_the_transaction("b"), insert("c")]
    outcomes = await queued_behind_a_held_writer(database, bodies)
    assert isinstance(outcomes[0], StoreError)  # its write went with the transaction
    assert "disk I/O error" in str(outcomes[0])
    assert isinstance(outcomes[1], StoreError)
    assert outcomes[2] == 2  # a fresh transaction after the lost one
    assert await names(database) == {"first", "c"}


async def test_a_caller_cancelled_before_its_turn_writes_nothing(database: Database) -> None:
    gate, entered = threading.Event(), threading.Event()
    first = asyncio.create_task(database.transact(holding(gate, entered)))
    await until(lambda: _true_or_none(entered.is_set()), "the first write holds the writer")
    cancelled = asyncio.create_task(database.transact(insert("never")))
    kept = asyncio.create_task(database.transact(insert("kept")))
    await until(lambda: _true_or_none(database.waiting_writes == 2), "both queued")
    cancelled.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await cancelled
    gate.set()
    await first
    assert await kept == 2
    assert await names(database) == {"first", "kept"}


async def test_a_raw_transaction_is_never_grouped(database: Database) -> None:
    """`transaction()` (migrations) runs in a transaction of its own."""
    gate, entered = threading.Event(), threading.Event()
    first = asyncio.create_task(database.transact(holding(gate, entered)))
    await until(lambda: _true_or_none(entered.is_set()), "the first write holds the writer")

    def raw(connection: sqlite3.Connection) -> None:
        connection.execute("INSERT INTO notes (name) VALUES ('raw')")
        connection.execute("ROLLBACK")  # would take the grouped bodies with it

    before = asyncio.create_task(database.transact(insert("before")))
    alone = asyncio.create_task(database.transaction(raw))
    after = asyncio.create_task(database.transact(insert("after")))
    await until(lambda: _true_or_none(database.waiting_writes == 3), "all queued")
    gate.set()
    await first
    assert await before == 2
    with pytest.raises(StoreError):
        await alone  # its COMMIT finds no transaction
    assert await after == 3
    assert await names(database) == {"first", "before", "after"}


async def test_writes_after_close_fail_rather_than_wait(tmp_path: Path) -> None:
    closed = await Database.open(tmp_path / "closed.db")
    await closed.close()
    outcomes = await asyncio.gather(
        *(closed.transact(insert(f"late{i}")) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(outcome, RuntimeError) for outcome in outcomes), outcomes
    assert "stopped" in str(outcomes[0])
