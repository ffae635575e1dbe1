"""Deferred work starts only after the answer, once; work that never starts is never
created (no coroutine is left un-awaited, an error under filterwarnings=error)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from bot.service import TaskOwner
from bot.slack.after_ack import collecting, defer


async def test_discarded_work_is_never_created() -> None:
    created: list[str] = []

    async def work() -> None:
        raise AssertionError("discarded work ran")

    def factory() -> Coroutine[Any, Any, None]:
        created.append("created")
        return work()

    with collecting() as after:
        defer(TaskOwner(), factory, name="never")
    after.discard()  # the request failed before its answer: nothing may start
    after.start()  # and nothing is left to start
    assert created == []


async def test_started_work_runs_once_after_the_answer() -> None:
    done: list[str] = []
    tasks = TaskOwner()

    async def work() -> None:
        done.append("ran")

    with collecting() as after:
        defer(tasks, work, name="later")
        assert done == []  # collected, not started, while the request is handled
    after.start()
    after.start()  # a second start finds nothing left
    await tasks.drain(5)
    assert done == ["ran"]


async def test_without_a_collector_work_starts_at_once() -> None:
    done: list[str] = []
    tasks = TaskOwner()

    async def work() -> None:
        done.append("ran")

    defer(tasks, work, name="now")  # Socket Mode: no HTTP answer to wait for
    assert tasks.pending == 1
    await tasks.drain(5)
    assert done == ["ran"]


async def test_discarded_work_gives_back_what_it_held() -> None:
    given_back: list[str] = []
    tasks = TaskOwner()

    async def work() -> None:
        raise AssertionError("discarded work ran")

    with collecting() as after:
        defer(tasks, work, name="never", dropped=lambda: given_back.append("dropped"))
    after.discard()  # the request failed before its answer (its place in bot.slack.admission)
    assert given_back == ["dropped"]
    assert tasks.pending == 0
