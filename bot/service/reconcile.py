"""Reconcile an uncertain call: a human says what happened, then the run goes on.

A call is uncertain when the process died after dispatching it and before recording its
result, and its replay policy is `manual`: only a person who checked the downstream
system may say whether it took effect. The choice is the runtime's `Resolution`:

- `VerifiedResult(result=...)`: the verified outcome; it becomes the call's result (the
  runner records it in the ledger when the run resumes, so nothing re-runs it);
- `RetryCall()`: run it again, accepting that it may repeat;
- `AbortCall()`: do not run it; the model is told the outcome is unknown.

Who may: the policy's admins and the people eligible to approve the call's tool who are
members of the run's channel, with the call's requester (its approval's, else the run's)
held to the self-approval rule (bot.service.authority.may_reconcile, scoped).
"""

from __future__ import annotations

from bot.errors import (
    ApprovalsError,
    InputError,
    NotAuthorizedError,
    ResolutionError,
    UnknownCallError,
)
from bot.policy.eligibility import is_eligible
from bot.runtime import (
    AbortCall,
    AgentRun,
    PendingCall,
    Resolution,
    RetryCall,
    VerifiedResult,
)
from bot.service.api import UncertainCall
from bot.service.applying import current_rows, row_for
from bot.service.asking import engine_stamp
from bot.service.authority import may_reconcile, member_of, scoped
from bot.service.leases import claim, leave_working
from bot.service.workflow import APPROVALS_PER_RUN_LIMIT, Workflow
from store.records import RunRecord

CHOICE_LABELS: dict[type, str] = {VerifiedResult: "result", RetryCall: "retry", AbortCall: "abort"}
"""How each resolution is named in the audit log (`reconciled`, detail.choice)."""


def choice_label(resolution: Resolution) -> str:
    """The resolution's name in the audit log; InputError for anything else."""
    label = CHOICE_LABELS.get(type(resolution))
    if label is None:
        raise InputError(
            "reconcile takes a VerifiedResult, RetryCall or AbortCall, "
            f"not {type(resolution).__name__}"
        )
    return label


def uncertain_call(state: AgentRun, call: str | None) -> PendingCall:
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


async def describe_uncertain(flow: Workflow, run_id: str, call: str | None) -> UncertainCall:
    """The uncertain call (by tool call id or execution key), as people are shown it."""
    await flow.require_run(run_id)
    return UncertainCall.of(run_id, uncertain_call(await flow.load_state(run_id), call))


async def reconcile_call(
    flow: Workflow,
    run_id: str,
    *,
    actor: str,
    call: str | None,
    resolution: Resolution,
    reason: str | None,
) -> RunRecord:
    """Claim the paused run, record the resolution in its state (and the ledger), audit
    it; returns the run claimed (`resuming`) for the caller to resume."""
    if not actor.strip():
        raise InputError("a reconciliation needs the actor's id")
    label = choice_label(resolution)
    run = await flow.require_run(run_id)
    if run.status != "paused":
        raise ResolutionError(f"run {run_id} is {run.status}; only a paused run can be reconciled")
    claimed = await claim(
        flow.store, flow.leases, run_id, expected_status="paused", new_status="resuming"
    )
    if claimed is None:
        raise ResolutionError(f"run {run_id} is being resumed by someone else; try again")
    try:
        saved, target = await _resolve(flow, claimed, actor, call, resolution, reason)
    except ApprovalsError:
        await leave_working(flow.store, flow.leases, run_id, new_status="paused")
        raise
    await flow.store.append_audit(
        "reconciled",
        actor=actor,
        run_id=run_id,
        detail={
            "tool": target.tool_name,
            "tool_call_id": target.tool_call_id,
            "execution_key": target.execution_key,
            "choice": label,
            "reason": reason,
        },
    )
    return saved


async def _resolve(
    flow: Workflow,
    run: RunRecord,
    actor: str,
    call: str | None,
    resolution: Resolution,
    reason: str | None,
) -> tuple[RunRecord, PendingCall]:
    state = await flow.load_state(run.run_id)
    target = uncertain_call(state, call)
    if not await _may_reconcile(flow, run, target, actor):
        await flow.store.append_audit(
            "refused",
            actor=actor,
            run_id=run.run_id,
            detail={"why": "not_authorized", "action": "reconcile", "tool": target.tool_name},
        )
        raise NotAuthorizedError(
            f"only an admin or an approver of {target.tool_name} may reconcile this call"
        )
    state.resolve(target, resolution, approver_id=actor, reason=reason)
    saved = await flow.store.save_run_state(
        run.run_id,
        expected_version=run.version,
        state_json=await flow.encode_state(state),
        status="resuming",
        schema_version=state.schema_version,
        engine=engine_stamp(state.engine),
    )
    return saved, target


async def _may_reconcile(flow: Workflow, run: RunRecord, call: PendingCall, actor: str) -> bool:
    """The rule of `may_reconcile`, with the call's requester: the requester of the call's
    approval (a thread reply's author for the calls it led to), else the run's."""
    rows = await flow.store.list_approvals(run_id=run.run_id, limit=APPROVALS_PER_RUN_LIMIT)
    approval = row_for(current_rows(rows), call)
    requester = approval.requester if approval is not None else run.requester
    verdict = await is_eligible(
        flow.rule_for(call.tool_name), actor, requester=requester, groups=flow.groups
    )
    member = await member_of(flow, run.channel, actor)
    return may_reconcile(flow.policy, scoped(flow.policy, verdict, actor, member=member), actor)
