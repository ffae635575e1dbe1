"""A resume the database fails is retried in-process and handed back to the sweeper,
not left `resuming` until a restart. The failure is real: another connection holds
SQLite's write lock on the service's file, and the service's writes give up on it
after 50 ms; then the lock clears and the run finishes once."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConflictError, LeaseLostError, StoreError, TamperError
from bot.runtime import Agent, AgentRegistry, ScriptedModel, current_tool_call, tool
from bot.service import Busy, Retrying
from bot.service.events import CallUncertain, ResumeStalled, RunFinished
from bot.service.retry import RetryPolicy, StalledResumes, transient
from tests.service.service_harness import APPROVER, REQUESTER, Harness, kinds

LOCK_WAIT_MS = 50


class WriteLock:
    """Another connection taking and releasing the database's write lock."""

    def __init__(self, database: Path) -> None:
        self._connection = sqlite3.connect(database, isolation_level=None)

    def take(self) -> None:
        self._connection.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self._connection.in_transaction:
            self._connection.execute("ROLLBACK")

    def close(self) -> None:
        self.release()
        self._connection.close()


@dataclass(kw_only=True)
class Downstream:
    """What the tools really did: (tool, execution key, attempt) per invocation. When
    `lock_after` is set, the next invocation takes the write lock once it has acted:
    the effect happened, recording its result will fail."""

    calls: list[tuple[str, str, int]] = field(default_factory=list)
    lock_after: WriteLock | None = None

    def act(self, name: str) -> None:
        call = current_tool_call()
        self.calls.append((name, call.execution_key, call.attempt))
        if self.lock_after is not None:
            self.lock_after.take()
            self.lock_after = None


def registry(downstream: Downstream) -> AgentRegistry:
    @tool(needs_approval=True, replay_policy="idempotent")
    async def deploy_release(service: str, version: str) -> str:
        """Deploy a release (the downstream knows its execution keys)."""
        downstream.act("deploy_release")
        return f"deployed {service} {version}"

    @tool(needs_approval=True, replay_policy="manual")
    async def restart_service(service: str) -> str:
        """Restart a service (not safe to repeat blindly)."""
        downstream.act("restart_service")
        return f"restarted {service}"

    models = {
        "ops": ScriptedModel([[("deploy_release", {"service": "api", "version": "2"})], "Done."]),
        "restarter": ScriptedModel([[("restart_service", {"service": "api"})], "Done."]),
    }
    return AgentRegistry(
        Agent(name=name, instructions=name, tools=[deploy_release, restart_service], model=model)
        for name, model in models.items()
    )


@pytest.fixture
def lock(db_path: Path) -> Any:
    held = WriteLock(db_path)
    yield held
    held.close()


async def open_retrying(
    open_harness: Callable[..., Any], downstream: Downstream, retry: RetryPolicy
) -> Harness:
    harness: Harness = await open_harness(
        registry=registry(downstream), busy_timeout_ms=LOCK_WAIT_MS, resume_retry=retry
    )
    return harness


async def approve_first(harness: Harness, agent: str = "ops") -> str:
    run = await harness.service.start_run(
        agent_name=agent, task="go", requester=REQUESTER, channel="C-ops"
    )
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    return run.run_id


async def status(harness: Harness, run_id: str) -> str:
    run = await harness.store.get_run(run_id)
    assert run is not None
    return run.status


async def test_a_result_that_could_not_be_recorded_reruns_an_idempotent_call_once_more(
    open_harness: Callable[..., Any], lock: WriteLock
) -> None:
    downstream = Downstream(lock_after=lock)
    waits: list[float] = []

    async def lock_clears_while_we_wait(seconds: float) -> None:
        waits.append(seconds)
        lock.release()

    retry = RetryPolicy(attempts=5, first_delay=0.2, sleep=lock_clears_while_we_wait)
    harness = await open_retrying(open_harness, downstream, retry)
    run_id = await approve_first(harness)
    await harness.service.drain()

    [(_, key, _), again] = downstream.calls
    assert again == ("deploy_release", key, 2)  # same key: the downstream dedupes it
    assert len(waits) == 1
    assert 0.1 <= waits[0] <= 0.2  # half fixed, half jitter
    assert await status(harness, run_id) == "completed"
    assert len(harness.notifier.of(RunFinished)) == 1
    assert harness.notifier.of(ResumeStalled) == []
    assert (await kinds(harness, run_id)).count("executed") == 1
    [entry] = await harness.store.ledger_entries(run_id=run_id)
    assert (entry.state, entry.attempt) == ("succeeded", 2)


async def test_a_manual_call_whose_result_was_lost_becomes_uncertain_not_rerun(
    open_harness: Callable[..., Any], lock: WriteLock
) -> None:
    downstream = Downstream(lock_after=lock)

    async def lock_clears(seconds: float) -> None:
        lock.release()

    harness = await open_retrying(open_harness, downstream, RetryPolicy(sleep=lock_clears))
    run_id = await approve_first(harness, "restarter")
    await harness.service.drain()

    assert [name for name, _, _ in downstream.calls] == ["restart_service"]  # not again
    [uncertain] = harness.notifier.of(CallUncertain)
    assert uncertain.call.tool_name == "restart_service"
    assert await status(harness, run_id) == "paused"
    [entry] = await harness.store.ledger_entries(run_id=run_id)
    assert entry.state == "uncertain"


async def test_given_up_the_thread_is_told_once_and_the_sweeper_finishes_it(
    open_harness: Callable[..., Any], lock: WriteLock
) -> None:
    downstream = Downstream()

    async def no_wait(seconds: float) -> None:
        return None

    harness = await open_retrying(open_harness, downstream, RetryPolicy(attempts=3, sleep=no_wait))
    run_id = await approve_first(harness)
    lock.take()  # before the resume task's first write (it has not run yet)
    await harness.service.drain()

    assert await status(harness, run_id) == "resuming"  # what recovery picks up
    [stalled] = harness.notifier.of(ResumeStalled)
    assert (stalled.run.run_id, stalled.attempts) == (run_id, 3)
    run = await harness.store.get_run(run_id)
    assert run is not None
    assert run.thread_ts is not None
    reply = await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text="where is it?"
    )
    assert isinstance(reply, Retrying)

    with pytest.raises(StoreError):  # the sweep's own writes fail too, still locked
        await harness.service.sweep()
    await harness.service.drain()
    assert len(harness.notifier.of(ResumeStalled)) == 1  # told once, not every pass
    assert downstream.calls == []

    lock.release()
    await harness.service.sweep()
    await harness.service.drain()
    assert await status(harness, run_id) == "completed"
    assert [name for name, _, _ in downstream.calls] == ["deploy_release"]
    assert len(harness.notifier.of(RunFinished)) == 1
    after = await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text="thanks"
    )
    assert not isinstance(after, Retrying | Busy)


def test_only_failures_that_may_pass_are_retried() -> None:
    assert transient(StoreError("write failed on x.db: database is locked"))
    for verdict in (ConflictError("lost"), TamperError("bad"), LeaseLostError("fenced")):
        assert not transient(verdict)
    assert not transient(ValueError("not ours"))


def test_backoff_doubles_up_to_its_ceiling_with_half_of_it_random() -> None:
    retry = RetryPolicy(first_delay=0.5, max_delay=4.0)
    for failures, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (9, 4.0)):
        delays = {retry.delay(failures) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1


def test_a_run_is_told_once_per_stretch_of_failures() -> None:
    stalled = StalledResumes()
    stalled.failing("r1")
    assert stalled.troubled("r1")
    assert stalled.park("r1")
    assert stalled.take_parked() == ["r1"]
    assert not stalled.park("r1")  # parked again: already told
    stalled.cleared("r1")
    assert not stalled.troubled("r1")
    assert stalled.park("r1")  # a new stretch: told again
