"""TaskOwner: the one owner of a layer's background tasks.

Work that outlives the request that started it (a resume after the last decision, Slack
work after the 3-second ack) runs in a task spawned here, never in a bare
`asyncio.create_task`. The owner keeps a strong reference to every live task, logs a
task that fails (the failure is not lost in a "Task exception was never retrieved"
warning), lets shutdown `drain` the tasks with a deadline and `aclose` cancel whatever
is left, so nothing outlives the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from bot.errors import ApprovalsError

T = TypeVar("T")

_log = logging.getLogger("bot.service.tasks")  # the name its log lines have always had


class TaskOwner:
    """Owns background tasks: spawn, log failures, drain on shutdown, cancel on close."""

    def __init__(self, *, logger: logging.Logger | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._log = logger or _log
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def pending(self) -> int:
        """How many spawned tasks have not finished yet."""
        return len(self._tasks)

    @property
    def closed(self) -> bool:
        return self._closed

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Run `coro` in a task this owner keeps until it ends.

        Spawning after `aclose` is a programming error: the coroutine is closed (never
        left un-awaited) and RuntimeError is raised.
        """
        if self._closed:
            coro.close()
            raise RuntimeError(f"TaskOwner is closed; cannot start task {name!r}")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        self._idle.clear()
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self._idle.set()
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, ApprovalsError):  # one of ours: its line says it all
            self._log.warning("background task %s failed: %s", task.get_name(), error)
        elif error is not None:
            self._log.error("background task %s failed", task.get_name(), exc_info=error)

    async def drain(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 (a shutdown deadline, passed down)
        """Wait until every task (including ones spawned meanwhile) has finished.

        Returns True when idle, False when `timeout` seconds passed first. Task failures
        are logged by the owner, never raised here.
        """
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self, *, timeout: float | None = 0.0) -> None:  # noqa: ASYNC109 (a shutdown deadline, passed down)
        """Refuse new tasks, give running ones `timeout` seconds, cancel the rest."""
        self._closed = True
        if await self.drain(timeout):
            return
        leftovers = list(self._tasks)
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)
