"""TaskOwner: spawned work is kept, failures are logged, drain waits, close cancels."""

from __future__ import annotations

import asyncio
import inspect
import logging

import pytest

from bot.errors import ConfigError, StoreError
from bot.service import TaskOwner
from bot.service.expiry import ExpirySweeper


async def test_drain_waits_for_every_task_including_ones_spawned_meanwhile() -> None:
    owner = TaskOwner()
    release = asyncio.Event()
    finished: list[str] = []

    async def second() -> None:
        finished.append("second")

    async def first() -> None:
        await release.wait()
        owner.spawn(second(), name="second")
        finished.append("first")

    owner.spawn(first(), name="first")
    assert owner.pending == 1
    assert await owner.drain(timeout=0) is False
    release.set()
    assert await owner.drain(timeout=5) is True
    assert finished == ["first", "second"]
    assert owner.pending == 0


async def test_a_failing_task_is_logged_not_lost(caplog: pytest.LogCaptureFixture) -> None:
    owner = TaskOwner()

    async def broken() -> None:
        raise ValueError("boom in the background")

    with caplog.at_level(logging.ERROR, logger="bot.service.tasks"):
        owner.spawn(broken(), name="broken-task")
        assert await owner.drain(timeout=5)
    [record] = [r for r in caplog.records if "broken-task" in r.getMessage()]
    assert record.exc_info is not None
    assert "boom in the background" in str(record.exc_info[1])


async def test_aclose_cancels_what_outlives_the_grace_and_refuses_new_work() -> None:
    owner = TaskOwner()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    owner.spawn(forever(), name="forever")
    await started.wait()
    await owner.aclose(timeout=0)
    assert cancelled.is_set()
    assert owner.pending == 0

    async def late() -> None:  # pragma: no cover - never runs
        pass

    coro = late()
    with pytest.raises(RuntimeError, match="closed"):
        owner.spawn(coro, name="late")
    # closed, so no "never awaited" warning
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


@pytest.mark.parametrize(
    "error",
    [StoreError("database is locked"), KeyError("approval_id")],
    ids=["store-error", "unexpected-error"],
)
async def test_the_sweeper_logs_a_failed_sweep_and_tries_again(
    caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """A failed pass, expected (the store) or a bug, must not stop expiry for good (runs
    would wait forever) nor surface only as an exception out of aclose at shutdown."""
    calls: list[int] = []
    recovered = asyncio.Event()

    async def sweep() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            raise error
        recovered.set()

    sweeper = ExpirySweeper(sweep, every_seconds=0.001)
    with caplog.at_level(logging.WARNING, logger="bot.service"):
        sweeper.start()
        await asyncio.wait_for(recovered.wait(), timeout=5)
        await sweeper.aclose()
    assert not sweeper.running
    (failed,) = [r for r in caplog.records if "expiry sweep failed" in r.getMessage()]
    assert len(calls) >= 2
    # the database's trouble is one line; a bug keeps its traceback
    assert (failed.exc_info is None) == isinstance(error, StoreError)


def test_the_sweep_interval_must_be_positive() -> None:
    async def sweep() -> None:  # pragma: no cover - never runs
        pass

    with pytest.raises(ConfigError, match="must be positive"):
        ExpirySweeper(sweep, every_seconds=0)
