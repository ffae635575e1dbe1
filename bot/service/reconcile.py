"""Reconcile an uncertain call: a human says what happened, then the run goes on.

A call is uncertain when the process died after dispatching it and before recording its
result, and its replay policy is `manual`: only a person who checked the downstream
system may say whether it took effect. The choices (exactly one):

- `result`: the verified outcome; it becomes the call's result (the runner records it
  in the ledger when the run resumes, so nothing re-runs it);
- `retry`: run it again, accepting that it may repeat;
- `abort`: do not run it; the model is told the outcome is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.errors import (
    ApprovalsError,
    InputError,
    NotAuthorizedError,
    ResolutionError,
    UnknownCallError,
)
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    AbortCall,
    PendingCall,
    Resolution,
    RetryCall,
    RunState,
    VerifiedResult,
)
from bot.service.authority import may_reconcile
from bot.service.codec import encode_state
from bot.service.parts import ServiceParts
from store.api import RunRecord


@dataclass(frozen=True, kw_only=True)
class Reconciliation:
    result: str | None = None
    retry: bool = False
    abort: bool = False

    @classmethod
    def parse(cls, *, result: str | None, retry: bool, abort: bool) -> Reconciliation:
        chosen = sum((result is not None, retry, abort))
        if chosen != 1:
            raise InputError("reconcile takes exactly one of result=..., retry or abort")
        return cls(result=result, retry=retry, abort=abort)

    @property
    def label(self) -> str:
        return "result" if self.result is not None else "retry" if self.retry else "abort"


def uncertain_call(state: RunState, call: str | None) -> PendingCall:
    """The uncertain call named by tool call id or execution key, or the only one."""
    uncertain = [c for c in state.get_interruptions() if c.status == "uncertain"]
    if call is None:
        if len(uncertain) != 1:
            names = ", ".join(c.tool_call_id for c in uncertain) or "none"
            raise UnknownCallError(
                f"run {state.run_id} has {len(uncertain)} uncertain calls ({names}); "
                "name the one to reconcile"
            )
        return uncertain[0]
    for candidate in uncertain:
        if call in (candidate.tool_call_id, candidate.execution_key):
            return candidate
    names = ", ".join(c.tool_call_id for c in uncertain) or "none"
    raise UnknownCallError(
        f"run {state.run_id} has no uncertain call {call!r} (uncertain: {names})"
    )


async def reconcile_call(
    parts: ServiceParts,
    run_id: str,
    *,
    actor: str,
    call: str | None,
    choice: Reconciliation,
    reason: str | None,
) -> RunRecord:
    """Claim the paused run, record the resolution in its state (and the ledger), audit
    it; returns the run claimed (`resuming`) for the caller to resume."""
    if not actor.strip():
        raise InputError("a reconciliation needs the actor's id")
    run = await parts.require_run(run_id)
    if run.status != "paused":
        raise ResolutionError(f"run {run_id} is {run.status}; only a paused run can be reconciled")
    claimed = await parts.store.transition_run(
        run_id, expected_status="paused", new_status="resuming"
    )
    if claimed is None:
        raise ResolutionError(f"run {run_id} is being resumed by someone else; try again")
    try:
        saved, target = await _resolve(parts, claimed, actor, call, choice, reason)
    except ApprovalsError:
        await parts.store.transition_run(run_id, expected_status="resuming", new_status="paused")
        raise
    await parts.store.append_audit(
        "reconciled",
        actor=actor,
        run_id=run_id,
        detail={
            "tool": target.tool_name,
            "tool_call_id": target.tool_call_id,
            "execution_key": target.execution_key,
            "choice": choice.label,
            "reason": reason,
        },
    )
    return saved


async def _resolve(
    parts: ServiceParts,
    run: RunRecord,
    actor: str,
    call: str | None,
    choice: Reconciliation,
    reason: str | None,
) -> tuple[RunRecord, PendingCall]:
    state = await parts.load_state(run.run_id)
    target = uncertain_call(state, call)
    if not await may_reconcile(
        parts, tool_name=target.tool_name, requester=run.requester, user=actor
    ):
        await parts.store.append_audit(
            "refused",
            actor=actor,
            run_id=run.run_id,
            detail={"why": "not_authorized", "action": "reconcile", "tool": target.tool_name},
        )
        raise NotAuthorizedError(
            f"only an admin or an approver of {target.tool_name} may reconcile this call"
        )
    resolution: Resolution = (
        VerifiedResult(result=choice.result)
        if choice.result is not None
        else RetryCall()
        if choice.retry
        else AbortCall()
    )
    state.resolve(target, resolution, approver_id=actor, reason=reason)
    saved = await parts.store.save_run_state(
        run.run_id,
        expected_version=run.version,
        state_json=await encode_state(state),
        status="resuming",
        schema_version=CURRENT_SCHEMA_VERSION,
    )
    return saved, target
