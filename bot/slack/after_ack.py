"""Work that starts only once Slack has its acknowledgement.

A listener's slow part (the service, other Web API calls) must not delay the HTTP answer.
Spawning it as a task right away is not enough: the task's synchronous start (building a
Web API request, say) would run in the next loop iteration, before aiohttp has written
the answer. So over HTTP the server opens a collector for the request, listeners `defer`
their work into it, and the server spawns the collected work into the TaskOwner right
after the response is written. Without a collector (Socket Mode, direct calls) `defer`
spawns at once.

The work starts as soon as the answer is out, with no priority for later acks. A lane
that ran it a few items at a time (anything waiting 0.75 s started anyway) was measured
with bench/ack.py and taken out: it helped only bursts shorter than its wait (the work
spilled past the burst), gave nothing under sustained load (the loop must do all the
work either way) and pushed views.open to 2.9 s after the click at c=64, against 1.5 s
without it: too close to Slack's 3-second trigger_id window.
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bot.service.tasks import TaskOwner


@dataclass(frozen=True, kw_only=True)
class _Deferred:
    tasks: TaskOwner
    coro: Coroutine[Any, Any, Any]
    name: str
    owns: tuple[Coroutine[Any, Any, Any], ...] = ()

    def close(self) -> None:
        """Close work that will never start, and the coroutines it would have awaited
        (closing a wrapper that never ran does not close what it wraps)."""
        self.coro.close()
        for inner in self.owns:
            inner.close()


_collector: contextvars.ContextVar[list[_Deferred] | None] = contextvars.ContextVar(
    "slack_after_ack", default=None
)


def defer(
    tasks: TaskOwner,
    coro: Coroutine[Any, Any, Any],
    *,
    name: str,
    owns: tuple[Coroutine[Any, Any, Any], ...] = (),
) -> None:
    """Run `coro` in a task owned by `tasks` once the current request is answered.
    `owns`: coroutines that `coro` wraps and awaits, closed with it if it never starts."""
    pending = _collector.get()
    if pending is None:
        tasks.spawn(coro, name=name)
    else:
        pending.append(_Deferred(tasks=tasks, coro=coro, name=name, owns=owns))


class AfterAck:
    """The work deferred while one request was handled."""

    def __init__(self) -> None:
        self._pending: list[_Deferred] = []

    def start(self) -> None:
        """Spawn the collected work (call after the response was written)."""
        pending, self._pending = self._pending, []
        for index, item in enumerate(pending):
            try:
                item.tasks.spawn(item.coro, name=item.name)
            except BaseException:
                for rest in pending[index + 1 :]:
                    rest.close()
                raise

    def discard(self) -> None:
        """Drop work that will never start (the request failed before its answer)."""
        pending, self._pending = self._pending, []
        for item in pending:
            item.close()


@contextmanager
def collecting() -> Iterator[AfterAck]:
    """Collect `defer`red work inside the block; the caller starts or discards it."""
    after = AfterAck()
    token = _collector.set(after._pending)
    try:
        yield after
    finally:
        _collector.reset(token)
