"""The approval workflow's shared context: what every operation of the service works with.

`Workflow` is built once by `ApprovalService` and handed to the modules that do the work
(voting, execution, resume, expiry, recovery, reconciliation), so each stays a set of
small functions over one explicit context instead of a growing class. It holds the
store, the agents, the notifier, the policy (with the group and channel directories), the
clock and the TaskOwner, and the steps
they all share: look up a run or an approval, load a run's state, and tell people (a
failed message is logged, never raised). Scheduling a resume is bot.service.resume's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from bot.clock import Clock
from bot.errors import (
    ApprovalsError,
    InputError,
    RunStateError,
    SchemaVersionError,
    TamperError,
)
from bot.policy.eligibility import ChannelDirectory, GroupDirectory
from bot.policy.rules import Policy, ToolRule
from bot.runtime import AgentRegistry, AgentRun
from bot.service.api import Surface
from bot.service.codec import decode_state, encode_state
from bot.service.events import (
    ApprovalDecided,
    CallUncertain,
    CardEvent,
    CardReach,
    Event,
    Location,
    Notifier,
    OutcomeToRequester,
    ResumeStalled,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunNeedsMigration,
    RunPaused,
    RunStarted,
    RunUnpaused,
)
from bot.service.leases import HeldLeases
from bot.service.retry import DEFAULT_RETRY, RetryPolicy, StalledResumes
from bot.service.telemetry import Telemetry
from bot.tasks import TaskOwner
from store.api import Store
from store.records import (
    ApprovalRecord,
    RunOrigin,
    RunRecord,
    StandingDecision,
)

log = logging.getLogger(__name__)

APPROVALS_PER_RUN_LIMIT = 10_000


@dataclass(frozen=True, kw_only=True)
class Workflow:
    store: Store
    registry: AgentRegistry
    notifier: Notifier
    dependencies: Mapping[str, Any]
    clock: Clock
    worker_id: str
    lease_seconds: float
    policy: Policy
    groups: GroupDirectory
    tasks: TaskOwner
    leases: HeldLeases  # the run leases this worker holds (bot.service.leases)
    channels: ChannelDirectory | None = None  # None: calls are not scoped to their channel
    retry: RetryPolicy = DEFAULT_RETRY  # a resume the database failed (bot.service.retry)
    stalled: StalledResumes = field(default_factory=StalledResumes)
    surface: Surface = "slack"
    telemetry: Telemetry = field(default_factory=Telemetry)
    # Card updates told beside other work (`notify_beside`), by approval id: a later
    # update of the same card waits for them, so a card never shows an older state last.
    card_updates: dict[str, asyncio.Task[Location | None]] = field(default_factory=dict)

    @property
    def actor(self) -> str:
        """How the service itself appears in the audit log."""
        return f"service:{self.worker_id}"

    @property
    def via(self) -> str:
        """Where people's decisions through this service come from (audit `via`)."""
        return self.surface

    @property
    def origin(self) -> RunOrigin | None:
        """The runs this service shows and decides (None: every run, for operators)."""
        return None if self.surface == "cli" else self.surface

    def check_reach(self, run: RunRecord, subject: str) -> None:
        """InputError when people of this surface may not see or act on `run`: a run the
        terminal demo started is decided at the terminal, a Slack run in Slack."""
        origin = self.origin
        if origin is None or run.origin == origin:
            return
        if run.origin == "terminal":
            raise InputError(
                f"{subject} belongs to a run started at the terminal (approvals-bot demo); "
                "it is decided there: approvals-bot approvals decide ID"
            )
        raise InputError(f"{subject} belongs to a run started in Slack; it is decided there")

    async def standing(self, run_id: str) -> tuple[StandingDecision, ...]:
        """The run's active standing decisions (what later cards of the run show)."""
        return tuple(await self.store.standing_decisions(run_id))

    async def record_tampering(
        self, *, run_id: str, approval_id: str, purpose: str, why: str, actor: str | None = None
    ) -> None:
        """A seal that did not verify (a row changed in the database without the keys):
        audited `tamper_detected` naming what was checked and why, and counted."""
        self.telemetry.decision_tampered(run_id=run_id, approval_id=approval_id)
        await self.store.append_audit(
            "tamper_detected",
            actor=actor or self.actor,
            run_id=run_id,
            approval_id=approval_id,
            detail={"purpose": purpose, "approval_id": approval_id, "why": why},
        )

    def rule_for(self, tool_name: str) -> ToolRule:
        return self.policy.rule_for(tool_name)

    # -- lookups -------------------------------------------------------------------------

    async def require_run(self, run_id: str) -> RunRecord:
        """The run's record (InputError when there is none)."""
        run = await self.store.get_run(run_id)
        if run is None:
            raise InputError(f"there is no run with id {run_id!r}")
        self.check_reach(run, f"run {run_id}")
        return run

    async def require_approval(self, approval_id: str) -> tuple[ApprovalRecord, RunRecord]:
        """The approval and its run (InputError when either is missing, or when the run is
        not this surface's to show: see `check_reach`)."""
        found = await self.store.approval_and_run(approval_id)  # one read, one snapshot
        if found is None:
            raise InputError(f"there is no approval with id {approval_id!r}")
        approval, run = found
        if run is None:
            raise InputError(f"approval {approval_id} belongs to no run")
        self.check_reach(run, f"approval {approval_id}")
        return approval, run

    async def run_of(self, approval: ApprovalRecord) -> RunRecord:
        run = await self.store.get_run(approval.run_id)
        if run is None:
            raise InputError(f"approval {approval.approval_id} belongs to no run")
        return run

    async def load_state(self, run_id: str) -> AgentRun:
        """The run's stored state, decrypted and decoded (a blob that fails either is
        reported to the telemetry before the error goes on)."""
        try:
            return await decode_state(await self.store.load_run_state(run_id))
        except (TamperError, RunStateError) as error:
            self.telemetry.state_unreadable(run_id, reason=_unreadable(error), error=str(error))
            raise

    async def encode_state(self, state: AgentRun) -> str:
        """The state's JSON text, to be saved (its size is measured)."""
        text = await encode_state(state)
        self.telemetry.state_saved(size=len(text) if text.isascii() else len(text.encode()))
        return text

    # -- telling people ------------------------------------------------------------------

    async def notify(self, event: Event) -> Location | None:
        """Tell people through the notifier; a failure is logged, never raised: the store
        is the record of truth, and a message that could not be posted must not undo or
        abort a recorded decision or a finished run. An event that shows a card is told
        how far the card reached (`card_reach`); a decided call's requester is told by
        direct message too where the policy asks, in a task of its own (a message held
        up by Slack's rate limits must not hold up the run)."""
        if isinstance(event, CardEvent):
            await self._after_earlier_update(event.approval.approval_id)
            event = replace(event, reach=await self.card_reach(event.approval))
        location = await self._told(event)
        if isinstance(event, ApprovalDecided) and self._tells_requester(event.approval):
            told = OutcomeToRequester(run=event.run, approval=event.approval)
            try:
                self.tasks.spawn(
                    self._told(told), name=f"service:outcome:{told.approval.approval_id}"
                )
            except RuntimeError:  # shutting down: the card and the thread have the outcome
                log.info(
                    "not telling the requester of %s by DM: shutting down",
                    told.approval.approval_id,
                )
        return location

    def notify_beside(
        self, approval_id: str, event: Callable[[], Awaitable[CardEvent]]
    ) -> Awaitable[Location | None]:
        """Start telling a card update in a task and answer it to await later, so that
        the caller's next steps (a decision's resume) wait neither for Slack's round trip
        nor for the reads that only the card needs: `event()` builds the update inside
        the task. Later updates of the same card wait for it (`notify`). Shutting down:
        told when the answer is awaited, as `notify` would."""
        try:
            task = self.tasks.spawn(self._built(event), name=f"service:card:{approval_id}")
        except RuntimeError:
            return self._built(event)
        self.card_updates[approval_id] = task
        task.add_done_callback(partial(self._forget_update, approval_id))
        return task

    async def _built(self, event: Callable[[], Awaitable[CardEvent]]) -> Location | None:
        return await self.notify(await event())

    def _forget_update(self, approval_id: str, task: asyncio.Task[Location | None]) -> None:
        if self.card_updates.get(approval_id) is task:
            del self.card_updates[approval_id]

    async def _after_earlier_update(self, approval_id: str) -> None:
        """Wait for a card update of the approval still being told beside (never raises:
        `notify` logs its own failures)."""
        earlier = self.card_updates.get(approval_id)
        if earlier is not None and earlier is not asyncio.current_task():
            await asyncio.wait({earlier})

    async def card_reach(self, approval: ApprovalRecord) -> CardReach:
        """How far the approval's card reached (nothing to read unless the tool's routing
        reaches past the thread)."""
        routing = self.rule_for(approval.tool_name).routing
        if not routing.sends_dms and not routing.escalation:
            return CardReach()
        copies = await self.store.approval_copies(approval.approval_id)
        steps = await self.store.escalations(approval.approval_id) if routing.escalation else []
        return CardReach(
            copies=tuple((c.channel, c.ts) for c in copies if c.channel and c.ts),
            sent_to=len(copies),
            escalated=tuple(s for s in steps if s.outcome == "escalated" and s.seal == "valid"),
            decided_in_channel=routing.decided_in_channel or not copies,
        )

    def _tells_requester(self, approval: ApprovalRecord) -> bool:
        by = approval.revoked_by if approval.status == "revoked" else approval.decider
        routing = self.rule_for(approval.tool_name).routing
        return routing.notify_requester == "dm" and approval.requester not in (None, by)

    async def _told(self, event: Event) -> Location | None:
        try:
            return await self.notifier.notify(event)
        except ApprovalsError as error:  # Slack said no: one line, not a bug
            log.warning("notifier.%s failed for %s: %s", event.kind, _subject(event), error)
        except Exception:
            log.exception("notifier.%s failed for %s", event.kind, _subject(event))
        return None


def _unreadable(error: TamperError | RunStateError) -> str:
    if isinstance(error, TamperError):
        return "tampered"
    return "schema_version" if isinstance(error, SchemaVersionError) else "invalid"


def _subject(event: Event) -> str:
    run_events = RunStarted | CallUncertain | RunFinished | RunFailed | RunCancelled
    if isinstance(event, run_events | RunPaused | RunUnpaused | ResumeStalled | RunNeedsMigration):
        return f"run {event.run.run_id}"
    return event.approval.approval_id
