"""The expiry sweeper: approvals nobody decided in time expire, and their runs go on.

A decision attempt on an overdue approval expires it on the spot, but a card nobody
clicks would leave its run paused forever. The sweeper calls the service's
`expire_due` every `every_seconds`: overdue approvals become `expired`, their cards
are updated, and a run with nothing left to wait for resumes (the expired call is not
run; the model is told so).

Each pass (`ApprovalService.sweep`) also sends the reminders that are due
(`remind_due`): claimed in the store first, so each approval is reminded once; and it
fires the escalation steps that are due (`escalate_due`), after expiring: an expired
call is never escalated. A step is fired once across replicas (the store claims due
steps `FOR UPDATE SKIP LOCKED`, so a sweep passes over a step whose approval another
transaction holds, a decision being recorded say, and the next pass finds it closed:
`skipped`, nobody told). Who may decide does not wait for the sweep: a step's people
are eligible from its sealed time on (bot.service.authority); the sweep tells them.

It is one long-lived task, owned by the sweeper's own TaskOwner (not by the service's,
whose `drain` waits for work that ends): `ApprovalService.aclose` stops it first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.errors import ApprovalsError, ConfigError
from bot.service.copies import after_escalation
from bot.service.events import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminder,
)
from bot.service.resume import resume_if_all_decided
from bot.service.widening import escalated_to
from bot.service.workflow import Workflow
from bot.tasks import TaskOwner
from store.records import ApprovalRecord, FiredEscalation

log = logging.getLogger(__name__)


async def expire_overdue(flow: Workflow) -> list[ApprovalRecord]:
    """Expire overdue approvals, update their cards, tell each requester in the thread,
    and resume the runs with nothing left to wait for."""
    expired = await flow.store.expire_due(now=flow.clock())
    for record in expired:
        flow.telemetry.approval_closed(record)
        run = await flow.run_of(record)
        await flow.notify(ApprovalDecided(run=run, approval=record))
        await flow.notify(ApprovalExpired(run=run, approval=record))
    for run_id in sorted({record.run_id for record in expired}):
        await resume_if_all_decided(flow, run_id)
    return expired


async def remind_due(flow: Workflow) -> list[ApprovalRecord]:
    """Send the reminders whose time has come, each once (claimed in the store first: a
    crash right after the claim loses that reminder rather than sending it twice). A
    reminder names the people of the escalation steps in force, then the approvers."""
    now = flow.clock()
    due = await flow.store.claim_reminders(now=now)
    for record in due:
        run = await flow.run_of(record)
        rule = flow.rule_for(record.tool_name)
        # Those it escalated to first: the steps in force are whom the wait is on now.
        escalated = await escalated_to(flow, record, rule, now)
        approvers = tuple(dict.fromkeys((*escalated, *rule.approvers)))
        await flow.notify(ApprovalReminder(run=run, approval=record, approvers=approvers))
    return due


async def escalate_due(flow: Workflow) -> list[FiredEscalation]:
    """Fire the escalation steps whose time has come, each once: say in the thread whom
    the call escalated to, send them copies where the rule sends direct messages, and
    show it on the card."""
    fired = await flow.store.fire_escalations(now=flow.clock())
    for item in fired:
        run = await flow.run_of(item.approval)
        await flow.notify(
            ApprovalEscalated(run=run, approval=item.approval, escalation=item.escalation)
        )
        await after_escalation(flow, run, item)
    return fired


class ExpirySweeper:
    def __init__(self, sweep: Callable[[], Awaitable[object]], *, every_seconds: float) -> None:
        if not every_seconds > 0:
            raise ConfigError(f"the expiry sweep interval must be positive, not {every_seconds}")
        self._sweep = sweep
        self._every = every_seconds
        self._tasks = TaskOwner(logger=log)
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = self._tasks.spawn(self._loop(), name="service:expiry-sweeper")

    async def _loop(self) -> None:
        while True:
            try:
                await self._sweep()
            except ApprovalsError as error:  # the database, say: one line, not a bug
                log.warning("expiry sweep failed (%s); trying again in %s s", error, self._every)
            except Exception:  # one bad pass must not end expiry for good
                log.exception("expiry sweep failed; trying again in %s s", self._every)
            await asyncio.sleep(self._every)

    async def aclose(self) -> None:
        self._task = None
        await self._tasks.aclose()
