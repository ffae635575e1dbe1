"""What the service tests share: the recording notifier (the one fake, at the people
edge), the harness around a real store and service, and small helpers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.demo import default_registry, ops_dependencies
from bot.review import ReviewSnapshot
from bot.runtime import AgentRegistry, PendingCall, arguments_digest
from bot.service import ApprovalService, Location, TaskOwner
from bot.service.views import ApprovalView
from store import SqliteStore, open_store
from store.api import ApprovalRecord, RunRecord

REQUESTER = "U-requester"
APPROVER = "U-approver"
OPS_TOKEN = "xoxb-1234567890-abcdefghijklmnop"
WORKER_ID = "local-test-installation"


@dataclass
class RecordingNotifier:
    """The notifier edge: records what people would have been told."""

    started: list[tuple[str, str]] = field(default_factory=list)
    cards: list[tuple[ApprovalRecord, ReviewSnapshot]] = field(default_factory=list)
    decided: list[ApprovalRecord] = field(default_factory=list)
    uncertain: list[PendingCall] = field(default_factory=list)
    finished: list[tuple[str, str | None, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    updated: list[ApprovalView] = field(default_factory=list)
    reminders: list[tuple[ApprovalRecord, tuple[str, ...]]] = field(default_factory=list)
    expired_notices: list[ApprovalRecord] = field(default_factory=list)
    refused: list[tuple[ApprovalRecord, str]] = field(default_factory=list)

    async def run_started(self, run: RunRecord, *, task: str) -> Location | None:
        self.started.append((run.run_id, task))
        return ("C-ops", f"1700000000.{len(self.started):06d}")

    async def approval_requested(
        self, run: RunRecord, approval: ApprovalRecord, snapshot: ReviewSnapshot
    ) -> Location | None:
        self.cards.append((approval, snapshot))
        return ("C-ops", f"1700000001.{len(self.cards):06d}")

    async def approval_decided(self, run: RunRecord, approval: ApprovalRecord) -> None:
        self.decided.append(approval)

    async def approval_updated(self, run: RunRecord, view: ApprovalView) -> None:
        self.updated.append(view)

    async def approval_reminder(
        self, run: RunRecord, approval: ApprovalRecord, approvers: Sequence[str]
    ) -> None:
        self.reminders.append((approval, tuple(approvers)))

    async def approval_expired_notice(self, run: RunRecord, approval: ApprovalRecord) -> None:
        self.expired_notices.append(approval)

    async def execution_refused(
        self, run: RunRecord, approval: ApprovalRecord, *, reason: str
    ) -> None:
        self.refused.append((approval, reason))

    async def call_uncertain(self, run: RunRecord, call: PendingCall) -> None:
        self.uncertain.append(call)

    async def run_finished(self, run: RunRecord, *, final_output: str | None, status: str) -> None:
        self.finished.append((run.run_id, final_output, status))

    async def run_failed(self, run: RunRecord, *, error: str) -> None:
        self.failed.append((run.run_id, error))

    def answer(self, run_id: str) -> str:
        [text] = [output for rid, output, _ in self.finished if rid == run_id]
        assert text is not None
        return text


@dataclass
class Harness:
    store: SqliteStore
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
    **service_options: Any,
) -> Harness:
    """The real store on `db_path` and a service over it with the ops agent."""
    store = await open_store(str(db_path), environ={})
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


async def kinds(harness: Harness, run_id: str) -> list[str]:
    """The run's audit trail, as event kinds in order."""
    return [event.kind for event in await harness.store.audit_events(run_id=run_id)]


async def paused_with_an_uncertain_restart(harness: Harness, approver: str = APPROVER) -> str:
    """A run whose approved `restart api` was dispatched by a dead worker: its execution
    key is claimed in the ledger directly (what the dead worker did before it died)."""
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    [call] = (await harness.service.load_state(run.run_id)).get_interruptions()
    await harness.store.ledger_claim(
        execution_key=call.execution_key,
        arguments_digest=arguments_digest(call.arguments),
        run_id=run.run_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        owner="dead-worker",
        lease_seconds=0.001,
    )
    await harness.service.decide(approval.approval_id, approve=True, decider=approver, reason="go")
    await harness.service.drain()
    [uncertain] = harness.notifier.uncertain
    assert uncertain.execution_key == call.execution_key
    return run.run_id
