"""What the service tells operators: one log line and its metrics per business event.

Each step of the workflow that changes something calls one method here, right where the
change was committed (the store's compare-and-set, the ledger's claim): a run started,
paused, finished or failed; an approval requested or closed (decided, expired,
revoked); a tool call claimed, recorded, answered from the ledger (reused) or left
uncertain; a digest mismatch; a resume tried or retried; a state saved or unreadable.
This class is the one place those events become log lines (logger
`approvals.events`) and Prometheus metrics (bot.metrics, when the service has them);
nothing below the service counts.

Counted once per event: where a step is shown to people again (recovery re-rendering a
decided card, a card updated when a standing decision ends) nothing is emitted, and a
call answered from the ledger counts as reused, not as a new execution.

A line carries `event` and the ids that locate it (run_id, approval_id, tool_call_id,
execution_key), plus an outcome, attempt or size where one applies, as structured
fields (bot.logs renders them as JSON or key=value). Never arguments, state, results
or the reasons people gave: an id is enough to find them in the audit log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from bot.clock import Clock, utc_now
from bot.metrics import Metrics
from bot.service.waiting import waited_seconds
from store.records import ApprovalRecord, RunRecord

log = logging.getLogger("approvals.events")

CLOSED_VERBS = {
    "approved": "approval decided",
    "rejected": "approval decided",
    "expired": "approval expired",
    "revoked": "approval revoked",
}
OTHER_TOOL = "other"  # the `tool` label of a name neither the policy nor an agent knows
KnownTools = Callable[[], Collection[str]]


class Telemetry:
    """Business events as log lines and metrics (see the module doc). Never raises into
    the workflow for a metric or a log line.

    `known_tools` answers the tool names a `tool` label may carry (the policy's and the
    registered agents'): any other name is counted as `other`, so a label set stays as
    small as the configuration, whatever names calls carry."""

    def __init__(
        self,
        metrics: Metrics | None = None,
        *,
        clock: Clock = utc_now,
        known_tools: KnownTools = frozenset,
    ) -> None:
        self.metrics = metrics
        self._clock = clock
        self._known_tools = known_tools

    # -- runs ----------------------------------------------------------------------------

    def run_started(self, run: RunRecord) -> None:
        _emit("run started", "run_started", {"run_id": run.run_id, "agent": run.agent_name})
        self._count("runs", event="started")

    def run_paused(self, run: RunRecord, *, waiting: int) -> None:
        _emit("run paused", "run_paused", {"run_id": run.run_id, "waiting": waiting})
        self._count("runs", event="paused")

    def run_ended(self, run: RunRecord, *, status: str) -> None:
        """completed, failed or cancelled (a failure's message is for people: not here)."""
        level = logging.WARNING if status == "failed" else logging.INFO
        _emit(f"run {status}", f"run_{status}", {"run_id": run.run_id}, level=level)
        self._count("runs", event=status)

    # -- approvals -----------------------------------------------------------------------

    def approval_requested(self, record: ApprovalRecord) -> None:
        fields = {**_approval_ids(record), "tool": record.tool_name}
        _emit("approval requested", "approval_requested", fields)
        self._count("approval_requested")

    def approval_closed(self, record: ApprovalRecord) -> None:
        """An approval reached a terminal status (approved, rejected, expired, revoked)."""
        waited = waited_seconds(record, self._clock())
        verb = CLOSED_VERBS.get(record.status, "approval closed")
        fields = {
            **_approval_ids(record),
            "outcome": record.status,
            "waited_seconds": round(waited, 3),
        }
        _emit(verb, verb.replace(" ", "_"), fields)
        if self.metrics:
            self.metrics.approval_decisions.labels(outcome=record.status).inc()
            self.metrics.approval_pending_age.labels(outcome=record.status).observe(waited)
            tool = self.tool_label(record.tool_name)
            self.metrics.time_to_decision.labels(tool=tool, outcome=record.status).observe(waited)
            if record.status == "expired":
                self.metrics.approval_expired.inc()

    def oldest_pending(self, created_at: datetime | None) -> None:
        """The oldest approval still pending (None: none is), for the gauge."""
        if self.metrics:
            age = 0.0 if created_at is None else (self._clock() - created_at).total_seconds()
            self.metrics.approval_pending_oldest.set(max(0.0, age))

    def digest_mismatch(self, *, run_id: str, approval_id: str | None, tool_call_id: str) -> None:
        _emit(
            "approved arguments differ from the call's; not run",
            "digest_mismatch",
            {"run_id": run_id, "approval_id": approval_id, "tool_call_id": tool_call_id},
            level=logging.WARNING,
        )
        self._count("argument_digest_mismatch")

    def decision_tampered(
        self, *, run_id: str, approval_id: str, tool_call_id: str | None = None
    ) -> None:
        """A decision whose seal does not verify (an approval's votes or request, or a
        standing decision: `tool_call_id` None): written without the keys."""
        _emit(
            "decision does not stand on valid seals (database tampering); not applied",
            "decision_tampered",
            {"run_id": run_id, "approval_id": approval_id, "tool_call_id": tool_call_id},
            level=logging.ERROR,
        )
        self._count("decision_seal_failure")

    # -- executions (the ledger) ----------------------------------------------------------

    def execution_claimed(self, call: CallIds, *, attempt: int) -> None:
        _emit("execution claimed", "execution_claimed", {**call.fields(), "attempt": attempt})
        self._count("executions", outcome="claimed")

    def execution_recorded(self, call: CallIds, *, attempt: int, is_error: bool) -> None:
        outcome = "failed" if is_error else "succeeded"
        fields = {**call.fields(), "attempt": attempt}
        _emit(f"execution {outcome}", f"execution_{outcome}", fields)
        self._count("executions", outcome=outcome)

    def execution_reused(self, call: CallIds) -> None:
        _emit("execution reused from the ledger", "execution_reused", call.fields())
        self._count("idempotency_reuse")

    def execution_uncertain(self, *, run_id: str, execution_key: str) -> None:
        _emit(
            "execution uncertain: a human must reconcile it",
            "execution_uncertain",
            {"run_id": run_id, "execution_key": execution_key},
            level=logging.WARNING,
        )
        self._count("effect_uncertain")

    # -- resumes and states ----------------------------------------------------------------

    def resume_attempted(self, run_id: str, *, attempt: int) -> None:
        _emit("resume attempted", "resume_attempted", {"run_id": run_id, "attempt": attempt})
        self._count("resume_attempts")

    def resume_retried(
        self, run_id: str, *, attempt: int, of: int, delay: float, error: str
    ) -> None:
        """Try `attempt` failed on the database; the next of `of` comes after `delay`."""
        _emit(
            f"resume failed on the database ({error}); try {attempt + 1} of {of} in {delay:.1f} s",
            "resume_retried",
            {"run_id": run_id, "attempt": attempt},
            level=logging.WARNING,
        )

    def state_saved(self, *, size: int) -> None:
        """A run state of `size` bytes is about to be saved (a metric only: no line)."""
        if self.metrics:
            self.metrics.state_blob_bytes.observe(size)

    def state_unreadable(self, run_id: str, *, reason: str, error: str) -> None:
        _emit(
            f"run state cannot be read: {error}",
            "state_unreadable",
            {"run_id": run_id, "reason": reason},
            level=logging.ERROR,
        )
        self._count("state_deserialize_failure", reason=reason)

    # -- helpers ---------------------------------------------------------------------------

    def tool_label(self, tool_name: str) -> str:
        """`tool_name` as a metric label: itself when configured, else `other`."""
        return tool_name if tool_name in self._known_tools() else OTHER_TOOL

    def _count(self, name: str, **labels: str) -> None:
        if self.metrics is None:
            return
        counter = getattr(self.metrics, name)
        (counter.labels(**labels) if labels else counter).inc()


def _emit(
    message: str, event: str, fields: Mapping[str, object], *, level: int = logging.INFO
) -> None:
    present = {key: value for key, value in fields.items() if value is not None}
    log.log(level, message, extra={"event": event, **present})


@dataclass(frozen=True, kw_only=True)
class CallIds:
    """The ids of one tool call, as its log lines carry them."""

    run_id: str
    tool_call_id: str
    execution_key: str
    approval_id: str | None

    def fields(self) -> dict[str, str | None]:
        return {
            "run_id": self.run_id,
            "approval_id": self.approval_id,
            "tool_call_id": self.tool_call_id,
            "execution_key": self.execution_key,
        }


def _approval_ids(record: ApprovalRecord) -> dict[str, str]:
    return {
        "run_id": record.run_id,
        "approval_id": record.approval_id,
        "tool_call_id": record.tool_call_id,
    }
