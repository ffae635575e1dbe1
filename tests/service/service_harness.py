"""What the service tests share: the recording notifier (the one fake, at the people
edge), the harness around a real store and service, and small helpers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bot.demo import default_registry, ops_dependencies
from bot.review.snapshot import ReviewSnapshot
from bot.runtime import CURRENT_SCHEMA_VERSION, AgentRegistry
from bot.service import ApprovalService, ApprovalView, Location, TaskOwner, UncertainCall
from bot.service.events import (
    ApprovalDecided,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    CallUncertain,
    Event,
    ExecutionRefused,
    RunFailed,
    RunFinished,
    RunStarted,
)
from store import SqliteStore, open_store
from store.postgres.store import PostgresStore
from store.records import ApprovalRecord, RunRecord
from tests.states import dispatched_by_a_dead_worker

REQUESTER = "U-requester"
APPROVER = "U-approver"
OPS_TOKEN = "xoxb-1234567890-abcdefghijklmnop"
WORKER_ID = "local-test-installation"


E = TypeVar("E")


@dataclass
class RecordingNotifier:
    """The notifier edge: records what people would have been told, in order."""

    events: list[Event] = field(default_factory=list)

    async def notify(self, event: Event) -> Location | None:
        self.events.append(event)
        channel = event.run.channel or "C-ops"  # Slack posts in the run's channel
        if isinstance(event, RunStarted):
            return (channel, f"1700000000.{len(self.of(RunStarted)):06d}")
        if isinstance(event, ApprovalRequested):
            return (channel, f"1700000001.{len(self.of(ApprovalRequested)):06d}")
        return None

    def of(self, kind: type[E]) -> list[E]:
        return [event for event in self.events if isinstance(event, kind)]

    @property
    def started(self) -> list[tuple[str, str]]:
        return [(e.run.run_id, e.task) for e in self.of(RunStarted)]

    @property
    def cards(self) -> list[tuple[ApprovalRecord, ReviewSnapshot]]:
        return [(e.approval, e.snapshot) for e in self.of(ApprovalRequested)]

    @property
    def decided(self) -> list[ApprovalRecord]:
        return [e.approval for e in self.of(ApprovalDecided)]

    @property
    def updated(self) -> list[ApprovalView]:
        return [e.view for e in self.of(ApprovalUpdated)]

    @property
    def reminders(self) -> list[tuple[ApprovalRecord, tuple[str, ...]]]:
        return [(e.approval, e.approvers) for e in self.of(ApprovalReminder)]

    @property
    def expired_notices(self) -> list[ApprovalRecord]:
        return [e.approval for e in self.of(ApprovalExpired)]

    @property
    def refused(self) -> list[tuple[ApprovalRecord, str]]:
        return [(e.approval, e.reason) for e in self.of(ExecutionRefused)]

    @property
    def uncertain(self) -> list[UncertainCall]:
        return [e.call for e in self.of(CallUncertain)]

    @property
    def finished(self) -> list[tuple[str, str | None, str]]:
        return [(e.run.run_id, e.final_output, e.status) for e in self.of(RunFinished)]

    @property
    def failed(self) -> list[tuple[str, str]]:
        return [(e.run.run_id, e.error) for e in self.of(RunFailed)]

    def answer(self, run_id: str) -> str:
        [text] = [output for rid, output, _ in self.finished if rid == run_id]
        assert text is not None
        return text


@dataclass
class Harness:
    store: SqliteStore | PostgresStore
    service: ApprovalService
    notifier: RecordingNotifier
    effects: Path
    closed: bool = False

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line]

    async def pending(self, run_id: str) -> list[ApprovalRecord]:
        return await self.store.list_approvals(run_id=run_id, status="pending")


async def open_service(
    db_path: Path,
    effects: Path,
    *,
    registry: AgentRegistry | None = None,
    notifier: RecordingNotifier | None = None,
    dependencies: Mapping[str, Any] | None = None,
    worker_id: str = WORKER_ID,
    busy_timeout_ms: int = 5000,
    **service_options: Any,
) -> Harness:
    """The real store on `db_path` and a service over it with the ops agent; its writes
    wait `busy_timeout_ms` for another connection's lock."""
    store = await open_store(str(db_path), environ={}, busy_timeout_ms=busy_timeout_ms)
    recorder = notifier or RecordingNotifier()
    try:
        service = ApprovalService(
            store=store,
            registry=registry or default_registry(),
            notifier=recorder,
            dependencies=dependencies if dependencies is not None else ops_dependencies(),
            tasks=TaskOwner(),
            worker_id=worker_id,
            **service_options,
        )
    except BaseException:
        await store.close()
        raise
    return Harness(store=store, service=service, notifier=recorder, effects=effects)


async def close_harness(harness: Harness) -> None:
    """Shut the service and the store down (a clean stop, as before a restart)."""
    if harness.closed:
        return
    harness.closed = True
    await harness.service.aclose(timeout=5)
    await harness.store.close()


async def start(harness: Harness, task: str = "deploy payments 1.2.3") -> RunRecord:
    """Start a run as the requester; it must pause for approval."""
    run = await harness.service.start_run(
        agent_name=None, task=task, requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "paused"
    return run


async def swap_paused_version(harness: Harness, run_id: str, version: str) -> None:
    """As someone able to write the store but without the keys' say: change the version
    the paused deploy call asks for, after the human saw its card."""
    tampered = json.loads((await harness.service.load_state(run_id)).to_json())
    tampered["history"][-1]["tool_calls"][0]["arguments"]["version"] = version
    tampered["pending_calls"][0]["arguments"]["version"] = version
    current = await harness.store.get_run(run_id)
    assert current is not None
    await harness.store.save_run_state(
        run_id,
        expected_version=current.version,
        state_json=json.dumps(tampered),
        status="paused",
        schema_version=CURRENT_SCHEMA_VERSION,
    )


async def kinds(harness: Harness, run_id: str) -> list[str]:
    """The run's audit trail, as event kinds in order."""
    return [event.kind for event in await harness.store.audit_events(run_id=run_id)]


async def paused_with_an_uncertain_restart(harness: Harness, approver: str = APPROVER) -> str:
    """A run whose approved `restart api` was dispatched by a dead worker: its execution
    key is claimed in the ledger directly (what the dead worker did before it died)."""
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    state = await harness.service.load_state(run.run_id)
    [call] = state.get_interruptions()
    await dispatched_by_a_dead_worker(harness.store, state, call)
    await harness.service.decide(approval.approval_id, approve=True, decider=approver, reason="go")
    await harness.service.drain()
    [uncertain] = harness.notifier.uncertain
    assert uncertain.execution_key == call.execution_key
    return run.run_id
