"""The store's Postgres connections, taken from asyncpg's pool and kept between uses.

asyncpg's `Pool.acquire` and `release` cost more client CPU than the statement they
carry on a vote's path: a proxy object, a future and the inactivity timer armed and
cancelled per use, a queue, and `release` run as a task of its own behind
`asyncio.shield`. On a small machine, where the client and the server share the cores,
that was about 30 us of client CPU per statement (bench/pg_vote_cpu.py; a raw vote
statement on a kept connection 53 us, through `pool.fetchrow` 83 us). So a connection
the pool handed out stays with the store: a clean use puts it back on the idle list (or
hands it to the oldest waiter), and the next use takes it at once.

Anything but a clean use gives the connection back to asyncpg's pool (`give_back`),
which does what it always did: waits out a cancellation, rolls back what is open,
terminates a connection it cannot reset, and connects anew on the next acquire. A kept
connection that closed while idle (the server dropped it) is given back when it comes up
and another is taken, so a failover costs the uses that were in flight, as before. At
most `size` connections are out of the pool at once (its own size), so the pool never
makes a taker wait on a connection the store keeps idle.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

T = TypeVar("T")


class Checkout:
    """Connections of `pool` (an asyncpg pool of `size`), kept between uses."""

    def __init__(self, pool: Any, size: int) -> None:
        self._pool = pool
        self._size = size
        self._idle: list[Any] = []  # out of the pool, free: the last one kept goes first
        self._out = 0  # connections taken from the pool and not given back
        self._waiters: deque[asyncio.Future[Any]] = deque()
        self._closing = False

    async def take(self) -> Any:
        """A connection for one use; hand it back with `keep` after a clean use, else
        with `give_back`."""
        while True:
            if self._idle:
                connection = self._idle.pop()
            elif self._out < self._size:
                self._out += 1
                try:
                    connection = await self._pool.acquire()
                except BaseException:
                    self._out -= 1
                    self._wake()
                    raise
            else:
                connection = await self._wait()
                if connection is None:  # one went back to the pool: try again
                    continue
            if _closed(connection):
                await self.give_back(connection)
                continue
            return connection

    async def use(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(connection)` on a connection taken for it: kept after a clean use, given
        back to the pool after any failure or cancellation."""
        connection = await self.take()
        try:
            outcome = await work(connection)
        except BaseException:
            await self.give_back(connection)
            raise
        if not self.keep(connection):
            await self.give_back(connection)
        return outcome

    def keep(self, connection: Any) -> bool:
        """Keep `connection` after a clean use (no transaction open, nothing in flight);
        False once the store is closing: the caller gives it back (the pool's `close`
        waits for it)."""
        if self._closing:
            return False
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return True
        self._idle.append(connection)
        return True

    async def give_back(self, connection: Any) -> None:
        """Return `connection` to the pool after a failed or cancelled use, or one that
        is no longer the store's to keep (migrations and copies release theirs here)."""
        try:
            await self._pool.release(connection)
        finally:
            self._out -= 1
            self._wake()

    async def close(self) -> None:
        """Give every idle connection back (the pool's `close` waits for them all), and
        from now on each one in use as soon as its use ends."""
        self._closing = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await self.give_back(connection)

    async def _wait(self) -> Any:
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled():  # handed over as its taker was cancelled: pass it on
                handed = waiter.result()
                if handed is None:
                    self._wake()
                elif not self.keep(handed):
                    await self.give_back(handed)
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def _wake(self) -> None:
        """A slot in the pool came free: the oldest waiter takes from the pool itself."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


def _closed(connection: Any) -> bool:
    """Whether the connection is gone: closed, or (closed and) already returned to the
    pool by asyncpg itself, which detaches the proxy we hold."""
    try:
        closed: bool = connection.is_closed()
    except asyncpg.InterfaceError:
        return True
    return closed
