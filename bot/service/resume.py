"""Resume a run whose decisions are all taken: claim it, verify, apply, run, persist.

Once a decision closes a run's last open approval, `resume_if_all_decided` claims the
run (`paused -> resuming` by compare-and-set, with its lease) and the winner resumes it
in a task the service owns (`start_resume`), so exactly one worker gets here per claim.
Before anything runs, the worker

1. reloads and decrypts the state from the store (never trusts a copy in memory),
2. matches each pending call with the latest approval row for its execution key (a
   provider may reuse a tool call id in a later turn; the key names one call for good),
3. recomputes each approved call's keyed digest from the persisted state (it binds
   agent, tool, execution key and arguments) and compares it, in constant time, with
   the digest the human approved, and the call's tool with the approved tool; a
   mismatch voids that approval (`revoked`, audit `digest_mismatch`), asks again for
   the call as it would really run and runs nothing,
4. applies the decisions into the RunState (approver, reason and the time the person
   decided into the approval metadata; a rejection's message, never its reason, to the
   model; an expired or revoked approval becomes a rejection the model sees),

and then runs the agent (steps 2 to 4: bot.service.applying). `ServiceJournal`
repeats the validity check for each approved call right before it runs.

A run this deployment cannot resume (its agent version is not registered, or its engine
cannot read its state: MIGRATION_NEEDED) is not failed: it goes back to `paused` with
its decisions kept, the run row says why (`needs_migration`), and its thread is told
(`RunNeedsMigration`). Deployed again, the version resumes it: the next start's recovery
finds it paused with nothing left to decide, as does `runs resume`.

A resume the database fails (locked, disk full: `bot.service.retry.transient`) is tried
again in-process with backoff, from the stored state as a restart's recovery would: the
run is looked at afresh (`resuming`: resume it; `paused` with nothing to wait for, a
pause that was half written: claim it and resume), and a ledger row our failed try left
`executing` follows the tool's replay policy (`safe` and `idempotent` run again with the
same execution key, `manual` becomes an uncertain call for a human). After the last try
the run is parked and its thread told (`ResumeStalled`); the sweeper tries it again on
each pass (`retry_parked`), and a thread reply meanwhile hears why it waits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.errors import ApprovalsError, RunStateError, StoreError, TamperError
from bot.runtime import AgentRun, PendingCall
from bot.service.applying import AppliedDecisions, apply_decisions, current_rows
from bot.service.asking import request_approvals
from bot.service.events import ResumeStalled
from bot.service.execution import MIGRATION_NEEDED, execute, void_approval
from bot.service.failure import fail_run, wait_for_migration
from bot.service.leases import claim, leave_working
from bot.service.retry import transient
from bot.service.workflow import APPROVALS_PER_RUN_LIMIT, Workflow
from store.records import TERMINAL_APPROVAL_STATUSES, ApprovalRecord, RunRecord, SealCheck

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ClaimersRead:
    """The run's approval rows a claimer read right before its claim (all terminal), and
    the request seal of the newest, checked on that same read (None: no approval)."""

    rows: Sequence[ApprovalRecord]
    request_seal: SealCheck | None


# -- scheduling a resume ------------------------------------------------------------------


async def resume_if_all_decided(flow: Workflow, run_id: str) -> bool:
    """Claim and start the run's resume once none of its approvals is open; True when
    this caller claimed it."""
    rows, request_seal = await flow.store.run_approvals(run_id, limit=APPROVALS_PER_RUN_LIMIT)
    if any(row.status not in TERMINAL_APPROVAL_STATUSES for row in rows):
        return False
    return await claim_resume(flow, run_id, read=ClaimersRead(rows=rows, request_seal=request_seal))


async def claim_resume(
    flow: Workflow,
    run_id: str,
    *,
    skip_locked: bool = False,
    read: ClaimersRead | None = None,
) -> bool:
    """Claim the run's resume (paused -> resuming, with its lease); the winner resumes
    it in a task. `skip_locked` (the sweeps): False at once, rather than waiting, when
    another transaction is acting on the run. `read`: the run's approval rows, all
    terminal, read just before the claim (its first try uses them rather than read them
    again; see `start_resume`).
    A claim the database failed is left to the sweeper (bot.service.retry): the
    decisions are recorded, and the run waits paused with nothing to wait for.
    A run an operator paused (held) is not claimed: `runs resume` releases it. The claim
    itself checks the hold, in its transaction (no read of the run before it, and no
    moment between a read and the claim for a hold to land in unseen)."""
    try:
        claimed = await claim(
            flow.store,
            flow.leases,
            run_id,
            expected_status="paused",
            new_status="resuming",
            skip_locked=skip_locked,
            unless_held=True,
        )
    except StoreError as error:
        if not transient(error):
            raise
        log.warning("cannot claim the resume of run %s (%s); retrying later", run_id, error)
        flow.stalled.retry_later(run_id)
        return False
    if claimed is None:
        await _say_if_held(flow, run_id)
        return False
    start_resume(flow, claimed, read=read)
    return True


async def _say_if_held(flow: Workflow, run_id: str) -> None:
    """Log why a decided run was not claimed when an operator's hold is the reason (a
    read made only when the claim lost, off the way to the effect)."""
    held = await flow.store.get_run(run_id)
    if held is not None and held.held:
        log.info("run %s is paused by %s; its resume waits for a release", run_id,
                 held.held_by)  # fmt: skip


def start_resume(flow: Workflow, run: RunRecord, *, read: ClaimersRead | None = None) -> None:
    """Resume a claimed (`resuming`) run in a task the service owns. `read`, when the
    claimer read the run's approval rows (all terminal) right before its claim: the first
    try matches the calls with them, and takes the stretch's requester from the newest
    row with its request seal checked on that read, instead of reading them again. They
    are as current as a read after the claim would be (only the resume's holder adds or
    voids rows of a run; a revocation may land after either read), and each approved
    call's row, request seal and votes are read and checked again right before it runs
    (ServiceJournal)."""
    flow.tasks.spawn(resume_run(flow, run, read=read), name=f"resume:{run.run_id}")


async def resume_run(
    flow: Workflow, run: RunRecord, *, read: ClaimersRead | None = None
) -> RunRecord | None:
    """Finish a claimed (`resuming`) run; see the module doc. Never raises for a run
    that fails: it is marked failed and people are told. A database failure is retried
    (`flow.retry`); None when this process gave up on it for now (parked)."""
    return await _with_retries(flow, run.run_id, first=run, attempts=flow.retry.attempts, read=read)


def retry_parked(flow: Workflow) -> list[str]:
    """Try each parked resume once more, in a task (the sweeper calls this)."""
    parked = flow.stalled.take_parked()
    for run_id in parked:
        flow.tasks.spawn(_with_retries(flow, run_id, attempts=1), name=f"resume:{run_id}")
    return parked


async def _with_retries(
    flow: Workflow,
    run_id: str,
    *,
    attempts: int,
    first: RunRecord | None = None,
    read: ClaimersRead | None = None,
) -> RunRecord | None:
    failures = 0
    while True:
        flow.telemetry.resume_attempted(run_id, attempt=failures + 1)
        try:
            done = await _advance(flow, run_id, first, read)
        except ApprovalsError as error:
            if not transient(error):
                flow.stalled.cleared(run_id)
                raise
            failures += 1
            flow.stalled.failing(run_id)
            if failures >= attempts:
                await _give_up(flow, run_id, failures, error)
                return None
            delay = flow.retry.delay(failures)
            flow.telemetry.resume_retried(
                run_id, attempt=failures + 1, of=attempts, delay=delay, error=str(error)
            )
            await flow.retry.sleep(delay)
            first, read = None, None
        else:
            flow.stalled.cleared(run_id)
            return done


async def _advance(
    flow: Workflow,
    run_id: str,
    run: RunRecord | None,
    read: ClaimersRead | None,
) -> RunRecord | None:
    """One try: resume the run if it is (still, or again) ours to resume: claimed by us,
    or claimable (a stalled pause; a resume whose lease we no longer hold, and nobody
    else does). `read`: made right before our claim of `run` (see `start_resume`)."""
    if run is None:
        run, read = await flow.require_run(run_id), None
    if run.status == "paused" and await stalled_pause(flow, run):
        run, read = (
            await claim(
                flow.store, flow.leases, run_id, expected_status="paused", new_status="resuming"
            ),
            None,
        )
    elif run.status == "resuming" and flow.leases.get(run_id) is None:
        run, read = (
            await claim(
                flow.store, flow.leases, run_id, expected_status="resuming", new_status="resuming"
            ),
            None,
        )
    if run is None or run.status != "resuming":
        return run  # finished, failed, or waiting for people: nothing to retry
    return await _resume_once(flow, run, read)


async def _give_up(flow: Workflow, run_id: str, failures: int, error: ApprovalsError) -> None:
    log.error(
        "resume of run %s failed %d times (%s); parked, the sweeper tries it again",
        run_id, failures, error,
    )  # fmt: skip
    if flow.stalled.park(run_id):
        run = await flow.store.get_run(run_id)
        if run is not None:
            await flow.notify(ResumeStalled(run=run, attempts=failures))


async def stalled_pause(flow: Workflow, run: RunRecord) -> bool:
    """Paused with nothing to wait for: not held by a person, no pending approval and
    no uncertain call."""
    if run.held:
        return False
    rows = await flow.store.list_approvals(run_id=run.run_id, limit=APPROVALS_PER_RUN_LIMIT)
    if any(row.status == "pending" for row in rows):
        return False
    state = await flow.load_state(run.run_id)
    return not any(call.status == "uncertain" for call in state.get_interruptions())


async def _resume_once(
    flow: Workflow, run: RunRecord, known: ClaimersRead | None = None
) -> RunRecord:
    try:
        state = await flow.load_state(run.run_id)
        agent = flow.registry.get(state.agent_name, state.agent_version)
        agent.check_state(state)
    except MIGRATION_NEEDED as error:
        return await wait_for_migration(flow, run, str(error))
    except ApprovalsError as error:
        if transient(error):
            raise  # retried: the state could not be read just now
        return await fail_run(flow, run, f"cannot resume: {error}")
    rows: Sequence[ApprovalRecord]
    if known is None:
        rows = await flow.store.list_approvals(run_id=run.run_id, limit=APPROVALS_PER_RUN_LIMIT)
    else:
        rows = known.rows
    try:
        applied = apply_decisions(state, current_rows(rows))
    except RunStateError as error:
        return await fail_run(flow, run, f"cannot resume: {error}")
    try:
        requester = await stretch_requester(
            flow, rows, checked=None if known is None else known.request_seal
        )
    except TamperError as error:
        return await fail_run(flow, run, f"cannot resume: {error}")
    if applied.mismatched:
        return await _void_and_ask_again(flow, run, state, applied, requester=requester)
    if applied.undecided:
        return await _back_to_paused(flow, run, state, applied.undecided, requester=requester)
    await flow.store.append_audit(
        "resumed",
        actor=flow.actor,
        run_id=run.run_id,
        detail={"approved": sorted(applied.approved), "rejected": sorted(applied.rejected)},
    )
    return await execute(
        flow,
        run,
        agent,
        state,
        approved=applied.approved,
        requester=requester,
        raise_transient=True,
        resume_if_decided=resume_if_all_decided,
    )


async def stretch_requester(
    flow: Workflow, rows: Iterable[ApprovalRecord], *, checked: SealCheck | None = None
) -> str | None:
    """Who asked for the stretch of the run being resumed: the requester of its newest
    approval (a follow-up's author, not necessarily the run's starter). Calls the resumed
    run pauses on are theirs too, so they cannot approve them under the self-approval rule.

    It is sealed into their requests, so it is taken only from a request whose seal
    verifies: a requester changed in the database on a decided row would otherwise let
    its real requester approve their next call. One that does not verify is audited
    `tamper_detected` and raises TamperError (the run fails; nothing more is asked); one
    made with a key this process's ring lacks is an operational StoreError (the resume
    is retried, then parked). No approval yet: None (the run's requester, which the
    database keeps fixed). `checked`: the newest row's request seal as checked on the
    read that gave `rows` (`Store.run_approvals`); else it is read and checked here."""
    newest = max(rows, key=lambda row: row.created_at, default=None)
    if newest is None:
        return None
    if checked is None:
        evidence = await flow.store.decision_evidence(newest.approval_id)
        seal = "missing" if evidence is None else evidence.request_seal
        requester = None if evidence is None else evidence.approval.requester
    else:
        seal, requester = checked, newest.requester
    if seal == "valid":
        return requester
    if seal == "unknown_key":  # operational: the ring lacks a key; the resume is retried
        raise StoreError(
            f"the request of approval {newest.approval_id} is sealed with a key this "
            "process's key ring lacks; the run waits until the ring has it"
        )
    await flow.record_tampering(
        run_id=newest.run_id, approval_id=newest.approval_id, purpose="request_seal",
        why=f"the seal of its request is {seal}: its requester cannot be trusted for the "
        "calls the run asks next",
    )  # fmt: skip
    raise TamperError(
        f"the request of approval {newest.approval_id} failed its seal; who asked for the "
        "run's next calls is unknown"
    )


async def _back_to_paused(
    flow: Workflow,
    run: RunRecord,
    state: AgentRun,
    waiting: list[PendingCall],
    *,
    requester: str | None,
) -> RunRecord:
    """Some call still waits for a decision (or lost its row in a crash): pause again
    first, then (re)request, so that the last decision can claim the resume."""
    paused = await leave_working(flow.store, flow.leases, run.run_id, new_status="paused")
    if paused is None:
        return await flow.store.get_run(run.run_id) or run
    try:
        await request_approvals(
            flow, paused, state, waiting, requester=requester,
            resume_if_decided=resume_if_all_decided,
        )  # fmt: skip
    except ApprovalsError as error:
        if transient(error):
            raise  # retried: the run is paused with nothing to wait for yet
        return await fail_run(flow, paused, f"cannot request approval: {error}")
    return paused


async def _void_and_ask_again(
    flow: Workflow,
    run: RunRecord,
    state: AgentRun,
    applied: AppliedDecisions,
    *,
    requester: str | None,
) -> RunRecord:
    for call, row in applied.mismatched:
        await flow.store.append_audit(
            "digest_mismatch",
            actor=flow.actor,
            run_id=run.run_id,
            approval_id=row.approval_id,
            detail={
                "tool": call.tool_name,
                "approved_tool": row.tool_name,
                "tool_call_id": call.tool_call_id,
                "approved_digest": row.arguments_digest,
                "state_digest": state.call_digest(call),
            },
        )
        flow.telemetry.digest_mismatch(
            run_id=run.run_id, approval_id=row.approval_id, tool_call_id=call.tool_call_id
        )
        await void_approval(
            flow, run, row, "the arguments in the stored state differ from the approved ones"
        )
    again = [call for call, _ in applied.mismatched]
    return await _back_to_paused(flow, run, state, again + applied.undecided, requester=requester)
