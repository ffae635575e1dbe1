"""Group commit on the writer thread: write transactions that arrive while the writer is
busy are committed together.

Each caller queues its body; whoever gets the writer next takes every body queued so far
(up to `GROUP_LIMIT`) and runs them in one `BEGIN IMMEDIATE ... COMMIT`, each inside its
own SAVEPOINT, so a body that fails rolls back alone and the others commit. Every caller
is answered after the COMMIT that holds its work, never before: a decision reported
committed is on disk exactly as when each had its own transaction, and every body still
sees the writes of the bodies before it. What changes is the number of fsyncs: with
`synchronous=FULL` each COMMIT waits for one (about 5 ms on the shared test machine), and
sixteen approvals resuming at once made ~66 write transactions in a row, one fsync each
(bench/approve_to_effect.py). A body alone in its group runs without a savepoint, as
before. When SQLite itself ends the transaction half-way (an I/O error, a full disk),
every body already run in it is told so (nothing of theirs committed) and the bodies
after it run in a fresh transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from bot.errors import StoreError
from store.sqlite.thread import settle
from store.tx import IntegrityViolation

T = TypeVar("T")

GROUP_LIMIT = 64  # bodies committed together at most: bounds the first one's wait


@dataclass(kw_only=True, eq=False)
class Write(Generic[T]):
    """One caller's write transaction, queued for the next group (see the module doc);
    `alone`: never grouped with others (migrations' raw bodies)."""

    work: Callable[[sqlite3.Connection], T]
    future: asyncio.Future[T]
    alone: bool = False
    taken: bool = False


_Outcome = tuple[Any, BaseException | None]


def _as_store_error(error: BaseException, path: Path) -> BaseException:
    """What a failed write raises to its caller: sqlite3's errors and a constraint's
    refusal as StoreError, anything else as it was."""
    if isinstance(error, sqlite3.Error | IntegrityViolation):
        store_error = StoreError(f"write failed on {path}: {error}")
        store_error.__cause__ = error
        return store_error
    return error


def take_group(queued: list[Write[Any]]) -> list[Write[Any]]:
    """The oldest queued writes that commit together: up to GROUP_LIMIT, stopping
    before one that must be alone (or taking just that one, when it is first)."""
    count = 0
    for job in queued[:GROUP_LIMIT]:
        if job.alone and count:
            break
        count += 1
        if job.alone:
            break
    group, queued[:count] = queued[:count], []
    for job in group:
        job.taken = True
    return group


def commit_group(
    connection: sqlite3.Connection,
    path: Path,
    group: list[Write[Any]],
    loop: asyncio.AbstractEventLoop,
) -> None:
    """On the writer thread: run the group, then hand each caller its outcome."""
    try:
        outcomes = run_group(connection, path, group)
    except BaseException as failed:  # the writer itself failed (a savepoint, a rollback)
        if connection.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
        outcomes = [(None, _as_store_error(failed, path))] * len(group)
    for job, (result, error) in zip(group, outcomes, strict=True):
        with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting
            loop.call_soon_threadsafe(settle, job.future, result, error)


def run_group(
    connection: sqlite3.Connection, path: Path, group: Sequence[Write[Any]]
) -> list[_Outcome]:
    """Each write's (result, error), in order, once the group's COMMIT is done."""
    if not group:
        return []
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as error:
        failed = StoreError(f"cannot start a write on {path}: {error}")
        return [(None, failed)] * len(group)
    grouped = len(group) > 1
    outcomes: list[_Outcome] = []
    for index, job in enumerate(group):
        outcome = run_one(connection, path, job, savepoint=grouped)
        if outcome[1] is not None and not connection.in_transaction:
            # Rolled back whole (alone: by us; grouped: SQLite ended it half-way, so
            # nothing of the bodies before this one committed either).
            lost = StoreError(f"write failed on {path}: {outcome[1]}")
            rest = run_group(connection, path, group[index + 1 :])
            return [(None, lost)] * index + [outcome, *rest]
        outcomes.append(outcome)
    try:
        connection.execute("COMMIT")
    except BaseException as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        return [(None, _as_store_error(error, path))] * len(group)
    return outcomes


def run_one(
    connection: sqlite3.Connection, path: Path, job: Write[Any], *, savepoint: bool
) -> _Outcome:
    """One write inside the open transaction: inside a SAVEPOINT in a group (a failure
    rolls back to it), else the transaction is rolled back on failure."""
    if savepoint:
        connection.execute("SAVEPOINT grouped_write")
    try:
        result = job.work(connection)
    except BaseException as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK TO grouped_write" if savepoint else "ROLLBACK")
            if savepoint:
                connection.execute("RELEASE grouped_write")
        return None, _as_store_error(error, path)
    if savepoint:
        connection.execute("RELEASE grouped_write")
    return result, None
