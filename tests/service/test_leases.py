"""Two workers (each its own store connection, service and worker id) on one database
file and one settable clock: a decided run is resumed by exactly one; a worker that
died mid-run is taken over once its lease runs out, under the replay policies; a
worker that only stalled is fenced off when it wakes; cancel ends the lease and
`runs resume` respects it; the sweeper acts once per approval across workers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ResolutionError
from bot.runtime import Agent, AgentRegistry, ScriptedModel, current_tool_call, tool
from bot.service import ApprovalService, TaskOwner
from bot.service.leases import HeldLeases, claim
from bot.service.recovery import INTERRUPTED_RUN_MESSAGE
from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key
from tests.polling import until
from tests.service.service_harness import RecordingNotifier
from tests.store.postgres_db import fresh_postgres_database

LEASE = 15.0
REQUESTER, APPROVER = "U-req", "U-app"


@dataclass
class Clock:
    now: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 9, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Downstream:
    """The tools' effects, and a gate that holds the next call inside the tool."""

    calls: list[tuple[str, str]] = field(default_factory=list)  # (tool, execution key)
    hold: bool = False
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def effect(self, name: str) -> str:
        self.calls.append((name, current_tool_call().execution_key))
        if self.hold:
            self.hold = False
            self.entered.set()
            await self.release.wait()
        return f"{name} done"


def registry(downstream: Downstream) -> AgentRegistry:
    @tool(needs_approval=True, replay_policy="idempotent")
    async def deploy(service: str) -> str:
        """Deploy a service."""
        return await downstream.effect("deploy")

    @tool(needs_approval=True, replay_policy="manual")
    async def restart(service: str) -> str:
        """Restart a service."""
        return await downstream.effect("restart")

    @tool(replay_policy="safe")
    async def peek(service: str) -> str:
        """Look at a service."""
        return await downstream.effect("peek")

    def agent(name: str, step: Any) -> Agent:
        model = ScriptedModel([step, "Done."])
        return Agent(name=name, instructions=name, tools=[deploy, restart, peek], model=model)

    return AgentRegistry(
        [
            agent("idempotent", [("deploy", {"service": "api"})]),
            agent("manual", [("restart", {"service": "api"})]),
            agent("quick", [("peek", {"service": "api"})]),
        ]
    )


@dataclass
class Worker:
    name: str
    store: Store
    service: ApprovalService
    notifier: RecordingNotifier
    stopped: bool = False

    async def stop(self, *, dies: bool = False) -> None:
        """A clean stop; `dies`: whatever still runs is cancelled, as if the process died."""
        if not self.stopped:
            self.stopped = True
            await self.service.aclose(timeout=0 if dies else 5.0)
            await self.store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One database both workers share: a SQLite file, or a fresh Postgres database."""
    if request.param == "sqlite":
        yield str(tmp_path / "approvals.db")
        return
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture
async def workers(database_url: str) -> AsyncIterator[Callable[..., Any]]:
    clock, keyring, downstream = Clock(), KeyRing([generate_key("k1")]), Downstream()
    opened: list[Worker] = []

    async def open_worker(name: str, *, lease_seconds: float = LEASE) -> Worker:
        store = await open_store(database_url, keyring=keyring, clock=clock, environ={})
        notifier = RecordingNotifier()
        service = ApprovalService(
            store=store, registry=registry(downstream), notifier=notifier, dependencies={},
            tasks=TaskOwner(), worker_id=name, clock=clock, lease_seconds=lease_seconds,
        )  # fmt: skip
        worker = Worker(name=name, store=store, service=service, notifier=notifier)
        opened.append(worker)
        return worker

    open_worker.clock = clock  # type: ignore[attr-defined]
    open_worker.downstream = downstream  # type: ignore[attr-defined]
    yield open_worker
    downstream.release.set()
    for worker in reversed(opened):
        await worker.stop(dies=True)


async def paused(worker: Worker, agent: str) -> str:
    run = await worker.service.start_run(
        agent_name=agent, task=f"{agent} api", requester=REQUESTER, channel="C1"
    )
    assert run.status == "paused"
    return run.run_id


async def approve_and_hold(worker: Worker, run_id: str, downstream: Downstream) -> None:
    """Approve the run's call through `worker`; its resume stops inside the tool."""
    downstream.hold = True
    [approval] = await worker.store.list_approvals(run_id=run_id, status="pending")
    await worker.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await asyncio.wait_for(downstream.entered.wait(), 10)


async def status(worker: Worker, run_id: str) -> str:
    run = await worker.store.get_run(run_id)
    assert run is not None
    return run.status


async def test_a_decided_run_is_resumed_by_exactly_one_worker(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "idempotent")
    await approve_and_hold(a, run_id, downstream)
    assert await b.service.recover() == 0  # A holds the run: B leaves it alone
    await b.service.sweep()
    await b.service.drain()
    downstream.release.set()
    await a.service.drain()
    assert await status(a, run_id) == "completed"
    assert [name for name, _ in downstream.calls] == ["deploy"]
    assert b.notifier.events == []


@pytest.mark.parametrize(
    ("agent", "expected_calls", "expected_status"),
    [
        ("idempotent", ["deploy", "deploy"], "completed"),  # again, with the same key
        ("manual", ["restart"], "paused"),  # uncertain: a human reconciles
    ],
)
async def test_a_worker_dying_mid_tool_is_taken_over_once_its_lease_ran_out(
    workers: Callable[..., Any], agent: str, expected_calls: list[str], expected_status: str
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, agent)
    await approve_and_hold(a, run_id, downstream)
    await a.stop(dies=True)  # dies inside the tool: resuming, its call executing

    clock.advance(LEASE - 1)
    await b.service.sweep()
    await b.service.drain()
    assert (await status(b, run_id), len(downstream.calls)) == ("resuming", 1)

    clock.advance(2)
    await b.service.sweep()
    await b.service.drain()
    assert await status(b, run_id) == expected_status
    assert [name for name, _ in downstream.calls] == expected_calls
    assert len({key for _, key in downstream.calls}) == 1
    if agent == "manual":
        [uncertain] = b.notifier.uncertain
        assert uncertain.tool_name == "restart"
    lease = await b.store.run_lease(run_id)
    assert lease is None  # B finished (or paused) the run and let go of it


async def test_a_decision_whose_worker_died_before_the_resume_is_acted_on(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "idempotent")
    [approval] = await a.store.list_approvals(run_id=run_id, status="pending")
    clock.advance(30)  # the person reads the card
    await a.service.record_decision(
        approval.approval_id, approve=True, decider=APPROVER, reason="go"
    )
    await a.stop(dies=True)  # the vote is committed; the card update and resume never ran

    await b.service.sweep()  # A may only be slow: not yet
    assert await status(b, run_id) == "paused"
    clock.advance(LEASE + 1)
    await b.service.sweep()
    await b.service.drain()
    assert await status(b, run_id) == "completed"
    assert [name for name, _ in downstream.calls] == ["deploy"]
    assert [record.status for record in b.notifier.decided] == ["approved"]  # its card


async def test_a_recorded_result_is_not_run_again_by_the_worker_taking_over(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "idempotent")
    [approval] = await a.store.list_approvals(run_id=run_id, status="pending")
    # A runs the call to its recorded result, then dies before saving the run.
    state = await a.service.load_state(run_id)
    [call] = state.get_interruptions()
    lease = await a.store.claim_run(
        run_id, expected_status="paused", new_status="resuming", owner="worker-a",
        lease_seconds=LEASE,
    )  # fmt: skip
    assert lease is not None
    await a.store.decide(approval.approval_id, decision="approved", decider=APPROVER, reason="go")
    claim = await a.store.ledger_claim(
        execution_key=call.execution_key, arguments_digest=state.call_digest(call),
        run_id=run_id, tool_call_id=call.tool_call_id, tool_name="deploy", owner="worker-a",
        lease_seconds=LEASE, run_lease_token=lease.token,
    )  # fmt: skip
    await a.store.ledger_record_result(
        execution_key=call.execution_key, lease_token=claim.lease_token,
        result="deploy done", is_error=False,
    )  # fmt: skip
    await a.stop(dies=True)

    clock.advance(LEASE + 1)
    await b.service.sweep()
    await b.service.drain()
    assert await status(b, run_id) == "completed"
    assert downstream.calls == []  # the result A recorded was reused


async def test_a_stalled_worker_is_fenced_off_when_it_wakes(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "manual")
    await approve_and_hold(a, run_id, downstream)  # A stalls inside the tool
    clock.advance(LEASE + 1)
    await b.service.sweep()
    await b.service.drain()
    assert await status(b, run_id) == "paused"  # B made the call uncertain

    downstream.release.set()  # A wakes: its result, its save, its failure are refused
    await a.service.drain()
    assert await status(a, run_id) == "paused"
    [entry] = await a.store.ledger_entries(run_id=run_id)
    assert entry.state == "uncertain"
    kinds = [event.kind for event in await a.store.audit_events(run_id=run_id)]
    assert "failed" not in kinds
    assert "executed" not in kinds
    assert a.notifier.failed == []


async def test_a_frozen_worker_whose_heartbeat_lost_the_run_leaves_it_parked(
    workers: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A froze (SIGSTOP) inside a manual call past its lease; B parked the call uncertain.
    When A wakes its heartbeat beats first and finds the run gone, then the call returns:
    A's result is refused, and A must stop, not fail the run B parked."""
    # A's heartbeat beats every 50 ms of real time; the fake clock alone decides expiry
    a, b = await workers("worker-a", lease_seconds=0.15), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "manual")
    thawed, beats = asyncio.Event(), []
    renew = a.store.renew_run_leases

    async def frozen_renew(leases: Any, *, lease_seconds: float) -> Any:
        await thawed.wait()  # a frozen process renews nothing
        renewed = await renew(leases, lease_seconds=lease_seconds)
        beats.append(len(renewed))
        return renewed

    monkeypatch.setattr(a.store, "renew_run_leases", frozen_renew)
    await approve_and_hold(a, run_id, downstream)  # A freezes inside the restart
    clock.advance(LEASE + 1)
    await b.service.sweep()
    await b.service.drain()
    assert await status(b, run_id) == "paused"  # B parked the call: uncertain
    [uncertain] = b.notifier.uncertain

    thawed.set()  # A wakes: its heartbeat finds the run taken and forgets its lease
    await until(lambda: _now(bool(beats) and beats[-1] == 0), "A's heartbeat never beat again")
    downstream.release.set()  # then the call returns
    await a.service.drain()

    run = await a.store.get_run(run_id)
    assert run is not None
    assert (run.status, run.held) == ("paused", False)
    [entry] = await a.store.ledger_entries(run_id=run_id)
    assert entry.state == "uncertain"
    kinds = [event.kind for event in await a.store.audit_events(run_id=run_id)]
    assert "failed" not in kinds
    assert a.notifier.failed == []
    assert (await b.service.uncertain_call(run_id)).execution_key == uncertain.execution_key


async def _now(value: bool) -> bool | None:
    return True if value else None


async def test_a_dead_workers_model_turn_fails_once_its_lease_ran_out(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    downstream.hold = True
    starting = asyncio.create_task(
        a.service.start_run(agent_name="quick", task="peek api", requester=REQUESTER, channel="C")
    )
    await asyncio.wait_for(downstream.entered.wait(), 10)
    starting.cancel()  # the process dies during the run's first turn
    with pytest.raises(asyncio.CancelledError):
        await starting
    await a.stop(dies=True)
    [run] = await b.store.list_runs(status="running")

    assert await b.service.recover() == 0  # its lease is live: maybe A is only slow
    clock.advance(LEASE + 1)
    await b.service.sweep()
    assert await status(b, run.run_id) == "failed"
    assert b.notifier.failed == [(run.run_id, INTERRUPTED_RUN_MESSAGE)]


async def test_cancel_ends_the_lease_and_the_holder_runs_nothing_more(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "idempotent")
    await approve_and_hold(a, run_id, downstream)
    assert await b.store.run_lease(run_id) is not None
    await b.service.cancel_run(run_id, actor=REQUESTER, reason="wrong service")
    assert await b.store.run_lease(run_id) is None
    downstream.release.set()
    await a.service.drain()
    assert await status(a, run_id) == "cancelled"
    assert [name for name, _ in downstream.calls] == ["deploy"]


async def test_runs_resume_waits_for_a_live_lease(workers: Callable[..., Any]) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    downstream: Downstream = workers.downstream  # type: ignore[attr-defined]
    run_id = await paused(a, "idempotent")
    await approve_and_hold(a, run_id, downstream)
    await a.stop(dies=True)
    with pytest.raises(ResolutionError, match="being worked on by worker-a"):
        await b.service.resume_stuck(run_id, actor="U-ops")
    clock.advance(LEASE + 1)
    await b.service.resume_stuck(run_id, actor="U-ops")
    await b.service.drain()
    assert await status(b, run_id) == "completed"


async def test_expiry_and_reminders_act_once_across_workers(
    workers: Callable[..., Any],
) -> None:
    a, b = await workers("worker-a"), await workers("worker-b")
    clock: Clock = workers.clock  # type: ignore[attr-defined]
    runs = [await paused(a, "idempotent") for _ in range(6)]  # expire in 24 h, remind 1 h before
    clock.advance(timedelta(hours=23, minutes=30).total_seconds())
    await asyncio.gather(a.service.sweep(), b.service.sweep(), a.service.sweep())
    reminded = a.notifier.reminders + b.notifier.reminders
    assert sorted(record.run_id for record, _ in reminded) == sorted(runs)

    clock.advance(timedelta(hours=1).total_seconds())
    await asyncio.gather(a.service.sweep(), b.service.sweep(), a.service.sweep())
    await a.service.drain()
    await b.service.drain()
    expired = a.notifier.expired_notices + b.notifier.expired_notices
    assert sorted(record.run_id for record in expired) == sorted(runs)
    for run_id in runs:
        assert await status(a, run_id) == "completed"  # resumed once: the model was told


async def test_the_heartbeat_renews_every_lease_at_once_and_drops_a_lost_one(
    database_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock, keyring = Clock(), KeyRing([generate_key("k1")])
    ours = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    theirs = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    held = HeldLeases(ours, owner="worker-a", lease_seconds=LEASE)
    try:
        for run_id in ("run-1", "run-2"):
            await ours.create_run(
                run_id=run_id, agent_name="quick", agent_version="1", schema_version="1.1",
                state_json="{}", status="paused",
            )  # fmt: skip
            await claim(ours, held, run_id, expected_status="paused", new_status="resuming")
        clock.advance(LEASE + 1)  # worker-a stalled: worker-b takes run-2 over
        taken = await theirs.claim_run(
            "run-2", expected_status="resuming", new_status="resuming", owner="worker-b",
            lease_seconds=LEASE,
        )  # fmt: skip
        assert taken is not None
        calls: list[int] = []
        batch = ours.renew_run_leases

        async def renew_all_at_once(leases: Any, *, lease_seconds: float) -> Any:
            calls.append(len(leases))
            return await batch(leases, lease_seconds=lease_seconds)

        monkeypatch.setattr(ours, "renew_run_leases", renew_all_at_once)
        await held.renew_all()

        assert calls == [2]  # one store call (one statement) for both leases
        kept = held.get("run-1")
        assert kept is not None
        assert kept.expires_at == clock.now + timedelta(seconds=LEASE)
        assert held.get("run-2") is None  # lost, as a taken-over lease always was
        assert len(held) == 1
        assert "run run-2 is no longer ours" in caplog.text
        assert await ours.run_lease("run-2") == taken
    finally:
        await held.aclose()
        await theirs.close()
        await ours.close()
