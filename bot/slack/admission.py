"""Admission of new runs: how many `/agent` starts run at once, how many wait their turn.

Everything a `serve` process does shares one event loop and one connection pool, first
come first served. Without a bound, under more `/agent` requests than the process can
start, every request became a task at once; each start's steps queued behind every other
start's, and the decisions of runs already waiting for people (and their resumes)
queued behind them all. At 20 runs/s on a 2-core machine shared with other work, the
backlog grew without end (1,900 runs in flight after 5 minutes, RSS +92%) and runs
nearly stopped completing: every run a little further along, few finished
(docs/production.md, "Faults and soak").

`StartGate` bounds that work. At most `starting` runs are being started at once (from
the `/agent` to the run's first pause for approval, or its end), at most `waiting` more
wait for a turn, in the order they came; a request beyond these is answered in the
acknowledgement itself that the bot is busy and to try again (`START_BUSY_TEXT`):
nothing is created, no run, no row. Work for runs already admitted (clicks, decisions,
the resumes after them, thread replies) never passes the gate, so it competes with at
most `starting` starts rather than with every request that came in.

Both bounds are settings (`start_gate_from_env`): `APPROVALS_STARTING_RUNS` (default 8)
and `APPROVALS_WAITING_RUNS` (default 64), for a process with more of a machine to itself.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from bot.errors import ConfigError

T = TypeVar("T")

STARTING_RUNS = 8
"""Starts at once: enough to keep the pool and the loop busy (a start waits on Slack and
the database most of its time), few enough that decisions are not queued behind them.
At 20 runs/s offered on a 2-core machine (bench/soak.py), 8 admitted 11.8 runs/s with
the decision's ack at p50 0.35 s; 32 admitted fewer (10.5/s) and the decisions, sharing
the loop with four times the starts, took 1.0 s at p50 and 2.5 s at p99, past the
2-second budget of their commit (bot.slack.interactions)."""
WAITING_RUNS = 64
"""Starts waiting for a turn: a few seconds of work at the rates this process carries."""
STARTING_ENV = "APPROVALS_STARTING_RUNS"
WAITING_ENV = "APPROVALS_WAITING_RUNS"


def start_gate_from_env(environ: Mapping[str, str] | None = None) -> StartGate:
    """The gate `APPROVALS_STARTING_RUNS` (at least 1) and `APPROVALS_WAITING_RUNS` (at
    least 0) set, each defaulting to the bound above; a bad value is a ConfigError."""
    env = os.environ if environ is None else environ
    return StartGate(
        starting=_count(env, STARTING_ENV, default=STARTING_RUNS, least=1),
        waiting=_count(env, WAITING_ENV, default=WAITING_RUNS, least=0),
    )


def _count(env: Mapping[str, str], name: str, *, default: int, least: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        count = int(text)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number of runs, not {text!r}") from None
    if count < least:
        raise ConfigError(f"{name} must be at least {least}, not {text!r}")
    return count


class StartGate:
    """The bound on runs being started and waiting to start (module doc)."""

    def __init__(self, *, starting: int = STARTING_RUNS, waiting: int = WAITING_RUNS) -> None:
        if starting < 1:
            raise ValueError(f"at least one run must be able to start, got starting={starting}")
        if waiting < 0:
            raise ValueError(f"waiting is a count of runs, got waiting={waiting}")
        self._starting = starting
        self._limit = starting + waiting
        self._admitted = 0
        self._turns: asyncio.Semaphore | None = None

    @property
    def admitted(self) -> int:
        """Starts admitted and not finished: running and waiting for a turn."""
        return self._admitted

    def admit(self) -> Admission | None:
        """A place for one more start, or None when the gate is full (answer: busy)."""
        if self._admitted >= self._limit:
            return None
        self._admitted += 1
        return Admission(self)

    def _semaphore(self) -> asyncio.Semaphore:
        if self._turns is None:  # made in the loop that first uses it
            self._turns = asyncio.Semaphore(self._starting)
        return self._turns

    def _leave(self) -> None:
        self._admitted -= 1


class Admission:
    """One admitted start: `run` it when its work begins, or `drop` it if that work never
    starts (the request failed before its answer). Either gives the place back, once."""

    def __init__(self, gate: StartGate) -> None:
        self._gate = gate
        self._left = False

    async def run(self, start: Callable[[], Awaitable[T]]) -> T:
        """Wait for a turn (in arrival order), then `start()`; the place is given back
        when it ends, however it ends."""
        try:
            async with self._gate._semaphore():
                return await start()
        finally:
            self.drop()

    def drop(self) -> None:
        if not self._left:
            self._left = True
            self._gate._leave()
