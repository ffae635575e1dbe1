"""What a framework is told about each paused call when a run resumes: the one reading
of the bot's decisions every adapter applies in its framework's own terms.

- approved (or a retry a human allowed: the ledger may then run it again) -> `Run`,
  with the arguments people approved when an approver changed them;
- a verified result a human recorded -> `Run` as well: the journal holds the result
  now, so the ledger answers it without running the tool;
- rejected -> `Refuse` with the rejection's message (all the model sees; the reason
  stays in the audit trail); aborted -> `Refuse` with the abort message.

Before any of it, `check_restored` compares the framework's restored call with the one
people decided on (the keyed digest of the tool name and arguments it asked with): a
framework state that asks for another call than the decided one runs nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.adapters.calls import ToolSite
from bot.canonical import digests_equal
from bot.errors import RunStateError, UnknownCallError
from bot.runtime import (
    AbortCall,
    ApprovedCall,
    ExternalRunState,
    PendingCall,
    RejectedCall,
    RetryCall,
    VerifiedResult,
)
from bot.runtime.decisions import ABORTED_MESSAGE


@dataclass(frozen=True, kw_only=True)
class Run:
    """Let the call run; `arguments` are set when an approver changed them."""

    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class Refuse:
    """Do not run the call; the model sees `message` as its result."""

    message: str


Verdict = Run | Refuse


async def verdict_for(site: ToolSite, pending: PendingCall) -> Verdict:
    """The framework's answer for `pending` (module doc); RunStateError when nobody
    decided it yet."""
    state = site.state
    decision = state.decision_for(pending)
    if isinstance(decision, ApprovedCall | RetryCall):
        if isinstance(decision, RetryCall):
            site.redispatch.add(pending.execution_key)
        return Run(arguments=state.amended_arguments(pending))
    if isinstance(decision, VerifiedResult):
        # a journal that never saw the key has nothing to reconcile: the tool runs
        with contextlib.suppress(UnknownCallError):
            await site.journal.resolve_with_result(
                execution_key=pending.execution_key, result=decision.result
            )
        return Run(arguments=state.amended_arguments(pending))
    if isinstance(decision, RejectedCall):
        return Refuse(message=decision.message)
    if isinstance(decision, AbortCall):
        return Refuse(message=ABORTED_MESSAGE)
    raise RunStateError(f"run {state.run_id}: call {pending.tool_call_id} is not decided yet")


def check_restored(
    state: ExternalRunState,
    *,
    tool_call_id: str,
    tool_name: str,
    arguments: Mapping[str, Any],
    framework: str,
) -> PendingCall:
    """The pending call a restored framework call answers, once its keyed digest is
    the one people decided on (RunStateError, and nothing runs, otherwise)."""
    pending = next((c for c in state.pending_calls() if c.tool_call_id == tool_call_id), None)
    if pending is None:
        raise RunStateError(
            f"run {state.run_id}: the {framework} state waits on call {tool_call_id!r}, "
            "which nobody was asked about"
        )
    restored = state.digest_of(
        tool_name=tool_name, execution_key=pending.execution_key, arguments=dict(arguments)
    )
    if not digests_equal(restored, state.requested_digest(pending)):
        raise RunStateError(
            f"run {state.run_id}: call {pending.tool_call_id} ({tool_name}) in the "
            f"restored {framework} state is not the call people decided on; nothing ran"
        )
    return pending
