"""Retrying a resume the database failed: which errors are worth another try, how long
to wait between tries, and which runs this process is retrying or gave up on for now.

A resume that meets a locked database, a full disk or an I/O error (a `StoreError` that
is not a verdict) is tried again in-process with backoff; after `attempts` tries it is
parked, its thread is told, and the sweeper (`ApprovalService.sweep`) tries it again on
each pass until it goes through. The run keeps its stored status (`resuming`, or
`paused` when a pause was half written) throughout, so a restart's recovery would pick
it up just the same.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.errors import (
    ConflictError,
    ExecutionKeyConflict,
    KeyMissingError,
    LeaseLostError,
    MigrationError,
    StoreError,
    TamperError,
)

_VERDICTS = (
    ConflictError,
    TamperError,
    KeyMissingError,
    MigrationError,
    ExecutionKeyConflict,
    LeaseLostError,
)


def transient(error: BaseException) -> bool:
    """A store failure that may go away by itself (locked, disk full, I/O): not a lost
    compare-and-set, a tampered blob, a key the ring lacks, a schema problem or a fenced
    lease, which another try would only meet again."""
    return isinstance(error, StoreError) and not isinstance(error, _VERDICTS)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """`attempts` tries in all; before try n+1 a wait of about `first_delay * 2**(n-1)`
    seconds (at most `max_delay`), half of it random, so that runs failing together do
    not come back together."""

    attempts: int = 5
    first_delay: float = 0.5
    max_delay: float = 8.0
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep

    def delay(self, failures: int) -> float:
        ceiling = min(self.max_delay, self.first_delay * 2.0 ** (failures - 1))
        return ceiling / 2 + random.uniform(0.0, ceiling / 2)


DEFAULT_RETRY = RetryPolicy()


class StalledResumes:
    """The runs whose resume is failing on the database in this process: retrying now,
    or parked until the sweeper's next pass. A run leaves when a try goes through (or
    finds nothing left to do)."""

    def __init__(self) -> None:
        self._failing: set[str] = set()
        self._parked: set[str] = set()
        self._told: set[str] = set()

    def failing(self, run_id: str) -> None:
        self._failing.add(run_id)

    def park(self, run_id: str) -> bool:
        """Give up for now; True the first time since the run started failing (tell
        its thread then, not at every pass of the sweeper)."""
        self._parked.add(run_id)
        first = run_id not in self._told
        self._told.add(run_id)
        return first

    def retry_later(self, run_id: str) -> None:
        """Park without giving up: the sweeper's next pass tries (and tells if that try
        is given up on)."""
        self._failing.add(run_id)
        self._parked.add(run_id)

    def take_parked(self) -> list[str]:
        """The parked runs, to be tried again (still failing until a try goes through)."""
        taken, self._parked = sorted(self._parked), set()
        return taken

    def cleared(self, run_id: str) -> None:
        self._failing.discard(run_id)
        self._parked.discard(run_id)
        self._told.discard(run_id)

    def troubled(self, run_id: str) -> bool:
        return run_id in self._failing
