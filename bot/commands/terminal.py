"""The service's notifier at a terminal, and a notifier that tells several audiences.

`TerminalNotifier` prints one plain block per event (the demo, and operator commands
that decide, cancel or resume): review cards with the redacted arguments and the digest,
votes, decisions, the answer. Arguments shown are the redacted review snapshot, never
the raw ones. `Fanout` tells each notifier in turn (the terminal and, when the CLI is
given a Slack token, the run's Slack thread); a posting's location is the first one
any of them answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from bot.credentials import redact_text
from bot.review.visible import arguments_json, visible
from bot.service import Location, Notifier
from bot.service.events import (
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    ApproversMentioned,
    AuditedCallRan,
    CallUncertain,
    DirectCopy,
    Event,
    ExecutionRefused,
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
from store.records import ApprovalRecord, StandingDecision


class TerminalNotifier:
    """The service's notifier for a terminal: plain lines on `out`."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def notify(self, event: Event) -> Location | None:
        print(event_text(event), file=self._out, flush=True)
        return None  # no thread, no card: nothing to update later


class Fanout:
    """Tells every notifier; a failing one does not stop the others (the service logs
    what the first failure was)."""

    def __init__(self, notifiers: Sequence[Notifier]) -> None:
        self._notifiers = tuple(notifiers)

    async def notify(self, event: Event) -> Location | None:
        location: Location | None = None
        failure: Exception | None = None
        for notifier in self._notifiers:
            try:
                answer = await notifier.notify(event)
            except Exception as error:
                failure = failure or error
                continue
            location = location or answer
        if failure is not None and location is None:
            raise failure
        return location


def event_text(event: Event) -> str:
    """One event as the terminal shows it."""
    match event:
        case RunStarted(run=run, task=task):
            task_shown = visible(redact_text(task))
            return f"run {run.run_id} ({run.agent_name} v{run.agent_version}): {task_shown}"
        case ApprovalRequested():
            return _requested_text(event)
        case ApprovalDecided():
            return _decided_text(event)
        case ApprovalUpdated(view=view):
            voters = ", ".join(view.voters) or "nobody yet"
            return (
                f"{view.approval.tool_name}: {view.approvals_count} of {view.required} "
                f"approvals ({voters}); digest {view.approval.arguments_digest}"
            )
        case ApprovalReminder(approval=approval):
            return (
                f"reminder: {approval.tool_name} ({approval.approval_id}) expires "
                f"{expiry(approval)}"
            )
        case ApprovalExpired(approval=approval):
            return f"{approval.tool_name} ({approval.approval_id}) expired: nobody decided in time"
        case ExecutionRefused(approval=approval, reason=reason):
            return f"{approval.tool_name} ({approval.approval_id}) was not run: {reason}"
        case CallUncertain(call=call):
            return (
                f"uncertain: {call.tool_name} (execution key {call.execution_key}) may or may "
                "not have taken effect; check the downstream system and reconcile it"
            )
        case RunFinished(final_output=final_output, status=status):
            suffix = "" if status == "completed" else f" ({status})"
            return f"\nanswer{suffix}:\n{final_output or '(no answer)'}"
        case RunFailed(error=error):
            return f"\nrun failed: {error}"
        case RunCancelled() | RunPaused() | RunUnpaused():
            return _control_text(event)
        case ResumeStalled(attempts=attempts):
            return (
                f"the database failed {attempts} times while resuming; retrying in the background"
            )
        case RunNeedsMigration(run=run, reason=reason):
            return (
                f"\nrun {run.run_id} needs migration: {reason}; it stays paused "
                f"(approvals-bot runs resume {run.run_id} once the version is back, or cancel it)"
            )
        case (
            DirectCopy()
            | ApprovalEscalated()
            | ApproversMentioned()
            | OutcomeToRequester()
            | AuditedCallRan()
        ):
            return _reach_text(event)


def _reach_text(
    event: DirectCopy
    | ApprovalEscalated
    | ApproversMentioned
    | OutcomeToRequester
    | AuditedCallRan,
) -> str:
    """How a call reached people (in Slack: direct messages, escalation, mentions, the
    after-the-fact card of an audit-only call)."""
    approval = event.approval
    call = f"{approval.tool_name} ({approval.approval_id})"
    match event:
        case AuditedCallRan(is_error=is_error):
            return (
                f"{call} ran without waiting (audit-only tool){' and failed' if is_error else ''}"
            )
        case DirectCopy(recipient=recipient):
            return f"{call}: a copy for {recipient} (direct messages are Slack's)"
        case ApprovalEscalated(escalation=escalation):
            return f"{call} escalated to {', '.join(escalation.approvers)}: nobody decided in time"
        case ApproversMentioned(approvers=approvers):
            return f"{call} waits for a decision of {', '.join(approvers)}"
        case OutcomeToRequester():
            return f"{call} {approval.status}; its requester {approval.requester} is told"


def _control_text(event: RunCancelled | RunPaused | RunUnpaused) -> str:
    """A person cancelled, paused or released the run."""
    run = event.run
    match event:
        case RunCancelled(actor=actor, reason=reason):
            return f"\nrun {run.run_id} cancelled by {actor}: {reason}"
        case RunPaused(actor=actor, reason=reason):
            return (
                f"\nrun {run.run_id} paused by {actor}: {reason} "
                f"(approvals-bot runs resume {run.run_id} lets it go on)"
            )
        case RunUnpaused(actor=actor):
            return f"\nrun {run.run_id} released by {actor}; it goes on"


def _requested_text(event: ApprovalRequested) -> str:
    approval, snapshot = event.approval, event.snapshot
    lines = [
        f"\napproval needed: {snapshot.tool_name} (approval {approval.approval_id})",
        f"  arguments: {compact(snapshot.arguments)}",
        *(f"  warning:   {line}" for line in snapshot.script_warnings()),
        f"  digest:    {snapshot.digest}",
        f"  expires:   {expiry(approval)}",
    ]
    lines += [f"  standing:  {standing_text(d)}" for d in event.standing]
    return "\n".join(lines)


def _decided_text(event: ApprovalDecided) -> str:
    approval = event.approval
    who = approval.decider or approval.revoked_by or "the service"
    line = f"{approval.tool_name}: {approval.status} by {who}"
    if approval.status == "revoked" and approval.revoke_reason:
        line += f" ({approval.revoke_reason})"
    if any(d.approval_id == approval.approval_id for d in event.standing):
        line += "; it stands for the rest of the run"
    window = event.window
    if window is not None and window.window_id == approval.approval_id:
        line += f"; it opened an approval window until {window.expires_at:%Y-%m-%d %H:%M} UTC"
    elif window is not None:
        line += f" (within {window.decider}'s approval window)"
    return line


def standing_text(decision: StandingDecision) -> str:
    return (
        f"{decision.tool_name} {decision.decision} for the rest of the run by "
        f"{decision.decider} (approval {decision.approval_id})"
    )


def expiry(approval: ApprovalRecord) -> str:
    return approval.expires_at.isoformat() if approval.expires_at else "never"


def compact(arguments: Mapping[str, Any]) -> str:
    """Arguments on one line, characters that hide or reorder text shown as escapes."""
    return arguments_json(arguments, indent=None)
