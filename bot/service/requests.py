"""Request memory for the people layer: concurrent sightings go to the store together.

Every Slack request asks whether it was seen before (bot.slack.dedupe) before it is
acknowledged. One write transaction per request would queue them behind each other on a
busy bot (64 requests at once: 64 commits, on SQLite each an fsync, one at a time);
instead the sightings that arrive while a write is in flight go together in the next
one (`Store.remember_requests` takes a batch), so a request waits for at most two
writes whatever the load. The writer task is owned by this object's TaskOwner: started by the
first sighting with nothing in flight, ended when none waits, cancelled by `aclose`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.tasks import TaskOwner
from store.api import Store


@dataclass(frozen=True, slots=True)
class _Sighting:
    key: str
    ttl_seconds: float
    answer: asyncio.Future[bool]


class RequestLog:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiting: list[_Sighting] = []
        self._tasks = TaskOwner()
        self._writer: asyncio.Task[None] | None = None

    async def remember(self, key: str, *, ttl_seconds: float) -> bool:
        """True the first time any worker on the database sees `key` within
        `ttl_seconds` (the store's errors come back here)."""
        loop = asyncio.get_running_loop()
        sighting = _Sighting(key=key, ttl_seconds=ttl_seconds, answer=loop.create_future())
        self._waiting.append(sighting)
        if self._writer is None or self._writer.done():
            self._writer = self._tasks.spawn(self._write(), name="service:request-memory")
        return await sighting.answer

    async def _write(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                answers = await self._store.remember_requests(
                    [(sighting.key, sighting.ttl_seconds) for sighting in batch]
                )
            except Exception as error:  # every waiter of the batch hears it
                for sighting in batch:
                    if not sighting.answer.done():
                        sighting.answer.set_exception(error)
                continue
            for sighting, first in zip(batch, answers, strict=True):
                if not sighting.answer.done():  # its caller may have stopped waiting
                    sighting.answer.set_result(first)

    async def aclose(self) -> None:
        """Stop writing; whoever still waits is cancelled."""
        self._writer = None
        await self._tasks.aclose()
        for sighting in self._waiting:
            sighting.answer.cancel()
        self._waiting.clear()
