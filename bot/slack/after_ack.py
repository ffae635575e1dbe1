"""Work that starts only once Slack has its acknowledgement, behind the acks.

A listener's slow part (the service, other Web API calls) must not delay the HTTP answer.
Spawning it as a task right away is not enough: the task's synchronous start (building a
Web API request, say) would run in the next loop iteration, before aiohttp has written
the answer. So over HTTP the server opens a collector for the request, listeners `defer`
their work into it, and the server spawns the collected work into the TaskOwner right
after the response is written. Without a collector (Socket Mode, direct calls) `defer`
spawns at once.

Under sustained load the event loop is work-conserving: every step of the work after
one ack (reading the approval, views.open over HTTP) takes its turn between the steps
of later requests, so it delays their acks. The server therefore runs collected work
through an `AfterAckLane`: at most `limit` items at a time, so accepting and answering
requests gets most of the loop; an item that has waited `max_wait` seconds starts
regardless, so a modal still opens well inside Slack's 3-second trigger_id window.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bot.service.tasks import TaskOwner

DEFAULT_LIMIT = 4
DEFAULT_MAX_WAIT_SECONDS = 0.75  # Slack's trigger_id lasts 3 s from the click


class AfterAckLane:
    """Admits post-ack work: at most `limit` running items, first come first served,
    except that an item waiting `max_wait` seconds is admitted at once (so `running` may
    exceed `limit` while the loop is overloaded)."""

    def __init__(
        self, *, limit: int = DEFAULT_LIMIT, max_wait: float = DEFAULT_MAX_WAIT_SECONDS
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if max_wait < 0:
            raise ValueError(f"max_wait must not be negative, not {max_wait}")
        self._limit = limit
        self._max_wait = max_wait
        self._running = 0  # admitted and not finished, counted from admission
        self._waiting: deque[asyncio.Future[None]] = deque()  # may hold admitted ones
        self._queued = 0  # waiting and not yet admitted

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return self._queued

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await `coro` once admitted (closing it, never started, if cancelled first)."""
        try:
            await self._admission()
        except BaseException:
            coro.close()
            raise
        try:
            return await coro
        finally:
            self._release()

    async def _admission(self) -> None:
        """Return holding a slot (counted in `running`)."""
        if self._running < self._limit and self._queued == 0:
            self._running += 1
            return
        loop = asyncio.get_running_loop()
        admitted: asyncio.Future[None] = loop.create_future()
        self._waiting.append(admitted)
        self._queued += 1
        overdue = loop.call_later(self._max_wait, self._admit, admitted)
        try:
            await admitted
        except BaseException:
            if admitted.cancelled():  # never admitted
                self._queued -= 1
            else:  # admitted, then cancelled before it could start: pass the slot on
                self._release()
            raise
        finally:
            overdue.cancel()

    def _admit(self, future: asyncio.Future[None]) -> None:
        if not future.done():
            future.set_result(None)
            self._queued -= 1
            self._running += 1

    def _release(self) -> None:
        self._running -= 1
        while self._waiting and self._running < self._limit:
            self._admit(self._waiting.popleft())


@dataclass(frozen=True, kw_only=True)
class _Deferred:
    tasks: TaskOwner
    coro: Coroutine[Any, Any, Any]
    name: str


_collector: contextvars.ContextVar[list[_Deferred] | None] = contextvars.ContextVar(
    "slack_after_ack", default=None
)


def defer(tasks: TaskOwner, coro: Coroutine[Any, Any, Any], *, name: str) -> None:
    """Run `coro` in a task owned by `tasks` once the current request is answered."""
    pending = _collector.get()
    if pending is None:
        tasks.spawn(coro, name=name)
    else:
        pending.append(_Deferred(tasks=tasks, coro=coro, name=name))


class AfterAck:
    """The work deferred while one request was handled."""

    def __init__(self, lane: AfterAckLane | None) -> None:
        self._lane = lane
        self._pending: list[_Deferred] = []

    def start(self) -> None:
        """Spawn the collected work (call after the response was written), through the
        lane when there is one."""
        pending, self._pending = self._pending, []
        for index, item in enumerate(pending):
            coro = item.coro if self._lane is None else self._lane.run(item.coro)
            try:
                item.tasks.spawn(coro, name=item.name)
            except BaseException:
                if coro is not item.coro:
                    item.coro.close()  # TaskOwner closed the lane's wrapper, not this
                for rest in pending[index + 1 :]:
                    rest.coro.close()
                raise

    def discard(self) -> None:
        """Drop work that will never start (the request failed before its answer)."""
        pending, self._pending = self._pending, []
        for item in pending:
            item.coro.close()


@contextmanager
def collecting(lane: AfterAckLane | None = None) -> Iterator[AfterAck]:
    """Collect `defer`red work inside the block; the caller starts or discards it."""
    after = AfterAck(lane)
    token = _collector.set(after._pending)
    try:
        yield after
    finally:
        _collector.reset(token)
