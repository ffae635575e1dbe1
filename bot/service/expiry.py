"""The expiry sweeper: approvals nobody decided in time expire, and their runs go on.

A decision attempt on an overdue approval expires it on the spot, but a card nobody
clicks would leave its run paused forever. The sweeper calls the service's
`expire_due` every `every_seconds`: overdue approvals become `expired`, their cards
are updated, and a run with nothing left to wait for resumes (the expired call is not
run; the model is told so).

It is one long-lived task, owned by the service (not by the TaskOwner, whose `drain`
waits for work that ends): `ApprovalService.aclose` stops it first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from bot.errors import ApprovalsError, ConfigError
from bot.service.parts import log


class ExpirySweeper:
    def __init__(self, sweep: Callable[[], Awaitable[object]], *, every_seconds: float) -> None:
        if not every_seconds > 0:
            raise ConfigError(f"the expiry sweep interval must be positive, not {every_seconds}")
        self._sweep = sweep
        self._every = every_seconds
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._loop(), name="service:expiry-sweeper"
            )

    async def _loop(self) -> None:
        while True:
            try:
                await self._sweep()
            except ApprovalsError:
                log.exception("expiry sweep failed; trying again in %s s", self._every)
            await asyncio.sleep(self._every)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
