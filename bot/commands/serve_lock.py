"""One `serve` per SQLite file: a lock file beside the database, held while serving.

SQLite is the backend for one process (it has no way to tell a live worker's leases from
a dead one's across machines, and its one writer is the bottleneck anyway); several
replicas run on Postgres. A second `approvals-bot serve` (or `socket`) on the same file
would recover, sweep and resume next to the first, so it is refused with one line
before it starts any of that (the store is opened first, so that an unusable database
is named as such). The lock is an advisory `flock` on `<database>.lock`: the
kernel releases it when the holder exits, however it exits (even SIGKILL), so a stale
lock file never blocks a restart. Operator commands (`approvals decide`, `runs cancel`
...) do not take it: they act next to a running server on purpose. `db copy` does
(`no_server`): a copy taken while a server still moves runs on the file would miss
what it does after, so it is refused, and no server starts on the file until it ends.
So does `keys rotate` (unless told the new key is in every process's ring): a server
whose ring lacks the new key could not read what it re-encrypts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from bot.errors import ConfigError


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


@contextlib.contextmanager
def sole_server(database: Path) -> Iterator[None]:
    """Hold the database's server lock for the block; ConfigError naming the file (and
    the holder's pid) when another process holds it."""

    def refusal(holder: str) -> str:
        return (
            f"another approvals-bot server ({holder}) is serving {database}; "
            "SQLite serves one process: stop that one, or run several on Postgres "
            "(APPROVALS_DATABASE_URL=postgresql://...)"
        )

    with _server_lock(database, refusal):
        yield


@contextlib.contextmanager
def no_server(database: Path, *, job: str, then: str = "stop the bot first") -> Iterator[None]:
    """Hold the database's server lock for an offline `job` (`db copy`, `keys rotate`):
    no server runs on the file during the block and none starts; ConfigError naming the
    holder's pid (and what to do: `then`) while one serves it."""

    def refusal(holder: str) -> str:
        return f"cannot {job} {database} while an approvals-bot server ({holder}) serves it; {then}"

    with _server_lock(database, refusal):
        yield


@contextlib.contextmanager
def _server_lock(database: Path, refusal: Callable[[str], str]) -> Iterator[None]:
    """The flock on `<database>.lock` with this process's pid in it, for the block;
    ConfigError(refusal(holder)) when another process holds it."""
    path = lock_path(database)
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise ConfigError(f"cannot create the server lock {path}: {error.strerror}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(refusal(_holder(path))) from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        pid = ""
    return f"pid {pid}" if pid.isdigit() else f"lock {path}"
