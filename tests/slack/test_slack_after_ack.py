"""Deferred work that never starts is closed whole: the wrapper and what it wraps."""

from __future__ import annotations

import inspect
from collections.abc import Coroutine
from typing import Any

from bot.service.tasks import TaskOwner
from bot.slack.after_ack import collecting, defer


async def _work(done: list[str]) -> None:
    done.append("ran")


async def _guard(inner: Coroutine[Any, Any, None]) -> None:
    await inner


async def test_discarded_work_closes_the_coroutines_it_wraps() -> None:
    done: list[str] = []
    inner = _work(done)
    wrapper = _guard(inner)
    with collecting() as after:
        defer(TaskOwner(), wrapper, name="never", owns=(inner,))
    after.discard()  # the request failed before its answer: nothing may start
    assert inspect.getcoroutinestate(wrapper) == inspect.CORO_CLOSED
    # Closing a wrapper that never ran leaves its inner coroutine unstarted, which
    # Python reports as "never awaited" (an error under filterwarnings=error).
    assert inspect.getcoroutinestate(inner) == inspect.CORO_CLOSED
    assert done == []


async def test_started_work_runs_once_after_the_answer() -> None:
    done: list[str] = []
    tasks = TaskOwner()
    with collecting() as after:
        defer(tasks, _work(done), name="later")
        assert done == []  # collected, not started, while the request is handled
    after.start()
    await tasks.drain(5)
    assert done == ["ran"]
