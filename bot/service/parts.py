"""What every part of the service shares: the store, the agents, the notifier, the clock.

`ServiceParts` is built once by `ApprovalService` and handed to the modules that do the
work (execution, resume, recovery), so each stays a set of small functions over one
explicit bundle instead of a growing class.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from bot.clock import Clock
from bot.errors import InputError
from bot.policy import GroupDirectory, Policy, ToolRule
from bot.review import ReviewSnapshot
from bot.runtime import AgentRegistry, PendingCall, RunState
from bot.service.codec import decode_state
from bot.service.notifier import Location, Notifier
from bot.service.views import ApprovalView
from store.api import ApprovalRecord, RunRecord, Store

log = logging.getLogger("bot.service")

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ServiceParts:
    store: Store
    registry: AgentRegistry
    notifier: Notifier
    dependencies: Mapping[str, Any]
    clock: Clock
    worker_id: str
    lease_seconds: float
    policy: Policy
    groups: GroupDirectory

    @property
    def actor(self) -> str:
        """How the service itself appears in the audit log."""
        return f"service:{self.worker_id}"

    def rule_for(self, tool_name: str) -> ToolRule:
        return self.policy.rule_for(tool_name)

    async def require_run(self, run_id: str) -> RunRecord:
        """The run's record (InputError when there is none)."""
        run = await self.store.get_run(run_id)
        if run is None:
            raise InputError(f"there is no run with id {run_id!r}")
        return run

    async def load_state(self, run_id: str) -> RunState:
        """The run's stored state, decrypted and decoded."""
        return await decode_state(await self.store.load_run_state(run_id))

    @property
    def notify(self) -> SafeNotifier:
        return SafeNotifier(self.notifier)


class SafeNotifier:
    """The notifier, with failures logged instead of raised.

    The store is the record of truth; a message that could not be posted must not undo
    or abort a recorded decision or a finished run."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier

    async def _attempt(
        self, method: str, subject: str, send: Callable[[], Awaitable[T]]
    ) -> T | None:
        try:
            return await send()
        except Exception:
            log.exception("notifier.%s failed for %s", method, subject)
            return None

    async def run_started(self, run: RunRecord, *, task: str) -> Location | None:
        send = partial(self._notifier.run_started, run, task=task)
        return await self._attempt("run_started", f"run {run.run_id}", send)

    async def approval_requested(
        self, run: RunRecord, approval: ApprovalRecord, snapshot: ReviewSnapshot
    ) -> Location | None:
        send = partial(self._notifier.approval_requested, run, approval, snapshot)
        return await self._attempt("approval_requested", approval.approval_id, send)

    async def approval_decided(self, run: RunRecord, approval: ApprovalRecord) -> None:
        send = partial(self._notifier.approval_decided, run, approval)
        await self._attempt("approval_decided", approval.approval_id, send)

    async def approval_updated(self, run: RunRecord, view: ApprovalView) -> None:
        send = partial(self._notifier.approval_updated, run, view)
        await self._attempt("approval_updated", view.approval.approval_id, send)

    async def approval_reminder(
        self, run: RunRecord, approval: ApprovalRecord, approvers: Sequence[str]
    ) -> None:
        send = partial(self._notifier.approval_reminder, run, approval, approvers)
        await self._attempt("approval_reminder", approval.approval_id, send)

    async def approval_expired_notice(self, run: RunRecord, approval: ApprovalRecord) -> None:
        send = partial(self._notifier.approval_expired_notice, run, approval)
        await self._attempt("approval_expired_notice", approval.approval_id, send)

    async def execution_refused(
        self, run: RunRecord, approval: ApprovalRecord, *, reason: str
    ) -> None:
        send = partial(self._notifier.execution_refused, run, approval, reason=reason)
        await self._attempt("execution_refused", approval.approval_id, send)

    async def call_uncertain(self, run: RunRecord, call: PendingCall) -> None:
        send = partial(self._notifier.call_uncertain, run, call)
        await self._attempt("call_uncertain", f"run {run.run_id}", send)

    async def run_finished(self, run: RunRecord, *, final_output: str | None, status: str) -> None:
        send = partial(self._notifier.run_finished, run, final_output=final_output, status=status)
        await self._attempt("run_finished", f"run {run.run_id}", send)

    async def run_failed(self, run: RunRecord, *, error: str) -> None:
        send = partial(self._notifier.run_failed, run, error=error)
        await self._attempt("run_failed", f"run {run.run_id}", send)
