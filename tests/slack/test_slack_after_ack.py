"""AfterAckLane: post-ack work runs a few at a time, in order, and none waits forever."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from bot.slack.after_ack import AfterAckLane


class Job:
    def __init__(self, started: list[str], name: str) -> None:
        self.name = name
        self.started = started
        self.release = asyncio.Event()
        self.began = asyncio.Event()

    async def __call__(self) -> str:
        self.started.append(self.name)
        self.began.set()
        await self.release.wait()
        return self.name


async def _began(job: Job) -> None:
    await asyncio.wait_for(job.began.wait(), 5.0)


async def test_at_most_limit_run_and_the_rest_start_in_arrival_order() -> None:
    lane = AfterAckLane(limit=2, max_wait=60)
    started: list[str] = []
    jobs = [Job(started, name) for name in "abcd"]
    tasks = [asyncio.create_task(lane.run(job())) for job in jobs]
    await _began(jobs[1])
    assert started == ["a", "b"]
    assert lane.running == 2
    assert lane.waiting == 2
    jobs[1].release.set()
    await _began(jobs[2])
    assert started == ["a", "b", "c"]
    assert lane.running == 2
    for job in jobs:
        job.release.set()
    assert await asyncio.gather(*tasks) == ["a", "b", "c", "d"]
    assert lane.running == 0
    assert lane.waiting == 0


async def test_work_that_waited_max_wait_starts_anyway() -> None:
    lane = AfterAckLane(limit=1, max_wait=0.01)
    started: list[str] = []
    blocker, late = Job(started, "blocker"), Job(started, "late")
    tasks = [asyncio.create_task(lane.run(blocker())), asyncio.create_task(lane.run(late()))]
    await _began(late)
    assert started == ["blocker", "late"]
    assert lane.running == 2  # over the limit: the overdue one was admitted
    blocker.release.set()
    late.release.set()
    assert await asyncio.gather(*tasks) == ["blocker", "late"]
    assert lane.running == 0


async def test_cancelled_while_waiting_closes_the_work_and_frees_nothing() -> None:
    lane = AfterAckLane(limit=1, max_wait=60)
    started: list[str] = []
    first, second, third = Job(started, "1"), Job(started, "2"), Job(started, "3")
    running = asyncio.create_task(lane.run(first()))
    never = second()
    waiting = asyncio.create_task(lane.run(never))
    await _began(first)  # tasks start in creation order: the second one queued by now
    assert lane.waiting == 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert inspect.getcoroutinestate(never) == "CORO_CLOSED"  # closed, never started
    assert lane.waiting == 0
    assert lane.running == 1
    after = asyncio.create_task(lane.run(third()))
    first.release.set()
    third.release.set()
    assert await running == "1"
    assert await after == "3"
    assert started == ["1", "3"]
    assert lane.running == 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        AfterAckLane(limit=0)
    with pytest.raises(ValueError, match="max_wait"):
        AfterAckLane(max_wait=-1)
