"""What operators (and a run's requester) do to a whole run: cancel it, pause it and
let it go on, or hand a run stuck in `resuming` back to recovery.

Cancel is one compare-and-set in the store on the version of the run as it was read
(`Store.cancel_run`): the run becomes `cancelled`, its open approvals close (`revoked`,
"run cancelled: <reason>") and its standing decisions end, in one transaction. A worker
that is resuming the run in another process at that moment is not corrupted: its next
tool call is refused by the journal (the run is cancelled), and its final save loses the
compare-and-set, so the cancel stands (`fail_run` leaves a cancelled run alone). A call
that was already running when the cancel landed finishes; the ledger and the audit say
so. If the run moved between the read and the cancel (a resume saved), the cancel is
tried again on the new version, a few times.

Resume (`runs resume`) is for a run left `resuming` by a process that died or hung: the
resume is run again here from the stored state, as recovery does (the ledger decides per
call). A run whose lease is live (a worker is on it and renewing) or with a tool call
executing under another worker's live lease is refused: that worker is alive and may
still finish it. Cancelling ends the run's lease, so that worker writes nothing more.

Pause (`runs pause`) holds the run (`Store.set_run_hold`, audited `paused`): it takes no
new step. A worker running it (in this process or another) sees the hold before its next
model turn or tool call (`ServiceJournal.pause_requested`): a tool already running
finishes and its result is recorded, and the run is saved `paused` with nothing to
decide. A held run waiting for decisions still takes them, but its resume is not
claimed (`bot.service.resume.claim_resume`). Nothing is undone: a pause, like a cancel, rolls back
no effect. `runs resume` on a held run releases it (audited `unpaused`) and, when
nothing is left to decide, claims its resume here. An engine other than the run core
takes the pause at its next pause for approval.
"""

from __future__ import annotations

from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError, ResolutionError
from bot.service.events import ApprovalDecided, RunCancelled, RunPaused, RunUnpaused
from bot.service.leases import claim
from bot.service.resume import claim_resume, stalled_pause, start_resume
from bot.service.workflow import APPROVALS_PER_RUN_LIMIT, Workflow
from store.records import CancelOutcome, RunRecord

CANCEL_ATTEMPTS = 3


async def cancel_run(flow: Workflow, run_id: str, *, actor: str, reason: str) -> CancelOutcome:
    """Cancel the run (see the module doc). The run's requester and the policy's admins
    may, and operators at the CLI (NotAuthorizedError otherwise, audited `refused`). A
    finished run -> AlreadyDecidedError naming its status; a blank reason -> InputError."""
    if not actor.strip():
        raise InputError("a cancellation needs the actor's id")
    if not reason.strip():
        raise InputError("say why the run is cancelled")
    run = await flow.require_run(run_id)
    await _require_control(flow, run, actor, action="cancel")
    for _ in range(CANCEL_ATTEMPTS):
        if run.finished:
            raise AlreadyDecidedError(f"run {run_id} is already {run.status}", status=run.status)
        outcome = await flow.store.cancel_run(
            run_id, expected_version=run.version, actor=actor, reason=reason, via=flow.via
        )
        if outcome.won:
            await _tell(flow, outcome, actor=actor, reason=reason.strip())
            return outcome
        run = outcome.run
    raise ResolutionError(f"run {run_id} keeps changing ({run.status}); try again")


async def _require_control(flow: Workflow, run: RunRecord, actor: str, *, action: str) -> None:
    """The run's requester and the policy's admins may act on a whole run, and operators
    at the CLI; anyone else is refused (audited `refused`, naming the action)."""
    if flow.surface == "cli" or actor == run.requester or flow.policy.is_admin(actor):
        return
    await flow.store.append_audit(
        "refused",
        actor=actor,
        run_id=run.run_id,
        detail={"why": "not_authorized", "action": action, "via": flow.via},
    )
    raise NotAuthorizedError(f"only the run's requester or an admin may {action} it")


async def pause_run(flow: Workflow, run_id: str, *, actor: str, reason: str) -> RunRecord:
    """Hold the run (see the module doc); its thread is told (`RunPaused`). Who may: as
    for cancel. A finished run -> AlreadyDecidedError; one already paused -> InputError
    naming who paused it and why; a blank reason -> InputError."""
    if not actor.strip():
        raise InputError("a pause needs the actor's id")
    if not reason.strip():
        raise InputError("say why the run is paused")
    run = await flow.require_run(run_id)
    await _require_control(flow, run, actor, action="pause")
    held = await flow.store.set_run_hold(run_id, actor=actor, reason=reason.strip(), via=flow.via)
    if held is None:
        current = await flow.require_run(run_id)
        if current.finished:
            raise AlreadyDecidedError(
                f"run {run_id} is already {current.status}", status=current.status
            )
        raise InputError(
            f"run {run_id} is already paused by {current.held_by}: {current.hold_reason}"
        )
    await flow.notify(RunPaused(run=held, actor=actor, reason=reason.strip()))
    return held


async def unpause_run(flow: Workflow, run_id: str, *, actor: str) -> RunRecord:
    """Release the run's hold (audited `unpaused`, its thread told); when it is paused
    with nothing left to decide, its resume is claimed and runs here, in a task the
    service owns. InputError for a run nobody paused."""
    run = await flow.require_run(run_id)
    await _require_control(flow, run, actor, action="resume")
    released = await flow.store.set_run_hold(run_id, actor=actor, reason=None, via=flow.via)
    if released is None:
        raise InputError(f"run {run_id} is not paused by anyone (it is {run.status})")
    await flow.notify(RunUnpaused(run=released, actor=actor))
    if released.status == "paused" and await stalled_pause(flow, released):
        await claim_resume(flow, run_id)
    return released


async def _tell(flow: Workflow, outcome: CancelOutcome, *, actor: str, reason: str) -> None:
    flow.telemetry.run_ended(outcome.run, status="cancelled")
    for approval in outcome.closed:
        flow.telemetry.approval_closed(approval)
        await flow.notify(ApprovalDecided(run=outcome.run, approval=approval))
    await flow.notify(RunCancelled(run=outcome.run, actor=actor, reason=reason))


async def resume_stuck(flow: Workflow, run_id: str, *, actor: str) -> RunRecord:
    """Hand a run stuck in `resuming` (or `paused` with every decision taken) back to
    recovery: its resume runs again, here, in a task the service owns (audited
    `resume_requested`). InputError for a run in any other state, naming what it waits
    for; ResolutionError while another worker holds a live lease on one of its calls."""
    run = await flow.require_run(run_id)
    if run.status == "paused":
        rows = await flow.store.list_approvals(run_id=run_id, limit=APPROVALS_PER_RUN_LIMIT)
        waiting = [row.approval_id for row in rows if row.status == "pending"]
        if waiting:
            raise InputError(
                f"run {run_id} is paused waiting for {len(waiting)} decision(s) "
                f"({', '.join(waiting[:5])}); decide them (approvals-bot approvals decide ID)"
            )
    elif run.status != "resuming":
        raise InputError(f"run {run_id} is {run.status}; only a run left resuming is resumed")
    await _refuse_live_work(flow, run)
    await flow.store.append_audit(
        "resume_requested",
        actor=actor,
        run_id=run_id,
        detail={"from_status": run.status, "via": flow.via},
    )
    if run.status == "paused":
        if not await claim_resume(flow, run_id):
            raise ResolutionError(f"run {run_id} was claimed by someone else meanwhile")
        return run
    claimed = await claim(
        flow.store, flow.leases, run_id, expected_status="resuming", new_status="resuming"
    )
    if claimed is None:
        raise ResolutionError(f"run {run_id} was claimed by someone else meanwhile")
    start_resume(flow, claimed)
    return claimed


async def _refuse_live_work(flow: Workflow, run: RunRecord) -> None:
    now = flow.clock()
    lease = await flow.store.run_lease(run.run_id)
    if lease is not None and lease.expires_at > now:
        raise ResolutionError(
            f"run {run.run_id} is being worked on by {lease.owner} (its lease runs until "
            f"{lease.expires_at.isoformat()} and is renewed while that worker lives); "
            "wait, or try again after that time"
        )
    for entry in await flow.store.ledger_entries(run_id=run.run_id, state="executing"):
        until = entry.lease_expires_at
        if until is not None and until > now and entry.lease_owner != flow.worker_id:
            raise ResolutionError(
                f"run {run.run_id} has a tool call ({entry.tool_name}) executing under "
                f"worker {entry.lease_owner} until {until.isoformat()}; "
                "that worker may still finish it: wait, or try again after that time"
            )
