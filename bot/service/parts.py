"""What every part of the service shares: the store, the agents, the notifier, the clock.

`ServiceParts` is built once by `ApprovalService` and handed to the modules that do the
work (execution, resume, recovery), so each stays a set of small functions over one
explicit bundle instead of a growing class.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.clock import Clock
from bot.errors import InputError
from bot.policy import GroupDirectory, Policy, ToolRule
from bot.runtime import AgentRegistry, RunState
from bot.service.api import (
    CallUncertain,
    Event,
    Location,
    Notifier,
    RunFailed,
    RunFinished,
    RunStarted,
)
from bot.service.codec import decode_state
from store.api import RunRecord, Store

log = logging.getLogger("bot.service")


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

    async def notify(self, event: Event) -> Location | None:
        """Tell people through the notifier; a failure is logged, never raised: the store
        is the record of truth, and a message that could not be posted must not undo or
        abort a recorded decision or a finished run."""
        try:
            return await self.notifier.notify(event)
        except Exception:
            log.exception("notifier.%s failed for %s", event.kind, _subject(event))
            return None


def _subject(event: Event) -> str:
    if isinstance(event, RunStarted | CallUncertain | RunFinished | RunFailed):
        return f"run {event.run.run_id}"
    return event.approval.approval_id
