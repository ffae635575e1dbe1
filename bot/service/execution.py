"""Run an agent for a run record and persist what came of it.

One path for every way a run moves on (a new task, a resume after decisions, a
follow-up message, a reconciliation): run the agent with the store-backed journal, then
persist the outcome by compare-and-set on the run's version and tell the notifier:

- paused: the encrypted state (status `paused`), one approval row per call waiting for a
  decision (redacted review snapshot + the call's keyed digest) with its card, and a
  `CallUncertain` notice per call whose outcome a human must reconcile (a run that
  stopped because a person paused it has none of these: it waits for `runs resume`);
- completed / max_turns: the final state (status `completed`) and the answer;
- an error: status `failed`, a `failed` audit event and one clear line for people;
- a lost lease (another worker took the run over, or it was cancelled): nothing, the
  run is the other's (bot.service.failure: fenced failure, letting go).

The policy's limits on calls per turn and approvals per run apply here
(bot.service.limits): past one, the run fails with one line that names the limit.
"""

from __future__ import annotations

import logging
from functools import partial

from bot.errors import (
    AgentNotRegisteredError,
    ApprovalsError,
    KeyMissingError,
    LeaseLostError,
    LimitError,
    SchemaVersionError,
    StateUnreadableError,
)
from bot.runtime import (
    Agent,
    AgentEngine,
    AgentRun,
    EngineResult,
)
from bot.service.amend import noted_agent
from bot.service.api import UncertainCall
from bot.service.asking import ResumeIfDecided, engine_stamp, request_approvals
from bot.service.audited import record_ran
from bot.service.authority import evidence_check
from bot.service.events import (
    ApprovalDecided,
    CallUncertain,
    ExecutionRefused,
    RunFinished,
)
from bot.service.failure import fail_run, let_go, wait_for_migration
from bot.service.last_check import ServiceJournal
from bot.service.limits import calls_per_turn_exceeded, check_pending
from bot.service.retry import transient
from bot.service.workflow import Workflow
from store.journal import StoreJournal
from store.records import (
    ApprovalRecord,
    RunRecord,
)

log = logging.getLogger(__name__)

MIGRATION_NEEDED = (
    AgentNotRegisteredError,
    SchemaVersionError,
    StateUnreadableError,
    KeyMissingError,
)
"""Why a deployment cannot resume a run it could resume once: its agent version is not
registered, its state is of a schema (ours, or its engine's) this build cannot read, or
it is sealed with a key this process's ring lacks (rotated in before every process had
it): the run waits, paused with its decisions kept, for a deployment that can."""


async def execute(
    flow: Workflow,
    run: RunRecord,
    agent: AgentEngine,
    state: AgentRun,
    *,
    approved: dict[str, ApprovalRecord] | None = None,
    requester: str | None = None,
    raise_transient: bool = False,
    resume_if_decided: ResumeIfDecided,
) -> RunRecord:
    """Run `agent` from `state` for `run` (status running or resuming) and persist the
    outcome. Never raises for a failed run: the run is marked failed and people told;
    with `raise_transient`, a database failure that may pass (bot.service.retry) is
    raised instead, for the caller to try again.

    `requester` is whoever asked for this stretch of the run (default the run's
    requester; a thread reply's author for a follow-up): the calls it pauses on are
    recorded as theirs, so the self-approval rule applies to the person who asked."""
    approvals = approved or {}
    lease_token = _lease_token(flow, run.run_id)
    journal = ServiceJournal(
        StoreJournal(
            flow.store,
            owner=flow.worker_id,
            lease_seconds=flow.lease_seconds,
            run_lease_token=lease_token,
        ),
        store=flow.store,
        run_id=run.run_id,
        actor=flow.actor,
        approvals=approvals,
        authorize=partial(evidence_check, flow),
        on_refused=partial(_tell_refused, flow, run),
        void=partial(void_approval, flow, run),
        on_executed=partial(record_ran, flow, run),
        clock=flow.clock,
        telemetry=flow.telemetry,
        fenced=lease_token is not None,
    )
    try:
        if isinstance(agent, Agent):
            agent = noted_agent(agent, approvals)
        result = await _run_agent(flow, agent, state, journal)
        check_pending(flow.policy.limits, result)
        saved = await save_outcome(flow, run, result)
    except Exception as error:  # mapped (or logged) by _went_wrong
        return await _went_wrong(flow, run, error, raise_transient=raise_transient)
    try:
        return await announce_outcome(
            flow, saved, result, requester=requester, resume_if_decided=resume_if_decided
        )
    except Exception as error:  # after the save: the saved record is the one to fail
        return await _went_wrong(flow, saved, error, raise_transient=raise_transient)


async def _went_wrong(
    flow: Workflow, run: RunRecord, error: Exception, *, raise_transient: bool
) -> RunRecord:
    """What a run comes to when its work raised `error` (`run`: the worker's latest record
    of it). A lost lease means the run is another worker's now: stop, change nothing."""
    if isinstance(error, LeaseLostError):
        return await let_go(flow, run, str(error))
    if isinstance(error, LimitError):
        return await fail_run(flow, run, str(error))
    if isinstance(error, MIGRATION_NEEDED):
        if run.status != "resuming":
            return await fail_run(flow, run, f"{type(error).__name__}: {error}")
        return await wait_for_migration(flow, run, str(error))
    if isinstance(error, ApprovalsError):
        if raise_transient and transient(error):
            raise error
        return await fail_run(flow, run, f"{type(error).__name__}: {error}")
    log.error("run %s failed unexpectedly", run.run_id, exc_info=error)
    return await fail_run(flow, run, "internal error (details in the bot's log)")


def _lease_token(flow: Workflow, run_id: str) -> int | None:
    """The fencing token of the run's lease, when this worker holds it."""
    lease = flow.leases.get(run_id)
    return None if lease is None else lease.token


async def _run_agent(
    flow: Workflow, agent: AgentEngine, state: AgentRun, journal: ServiceJournal
) -> EngineResult:
    """Run the agent; the run core's also stops before a step once the run is paused
    (held). Another engine's run takes the pause at its next pause for approval."""
    limit = flow.policy.limits.tool_calls_per_turn
    try:
        if isinstance(agent, Agent):
            return await agent.run(
                state,
                journal=journal,
                dependencies=flow.dependencies,
                max_tool_calls_per_turn=limit,
                pause=journal.pause_requested,
            )
        return await agent.run(
            state, journal=journal, dependencies=flow.dependencies, max_tool_calls_per_turn=limit
        )
    except LimitError as error:
        raise calls_per_turn_exceeded(error) from None


async def void_approval(flow: Workflow, run: RunRecord, approval: ApprovalRecord, why: str) -> bool:
    """Void an approval whose call has not started: it is revoked (`voided: <why>`) and
    its card updated in place to say so, so the call can be asked again. False (and the
    card shown as it stands) when its call already started: the store refuses then."""
    voided = await flow.store.revoke(
        approval.approval_id, actor=flow.actor, reason=f"voided: {why}"
    )
    if voided.won:
        flow.telemetry.approval_closed(voided.record)
    await flow.notify(ApprovalDecided(run=run, approval=voided.record))
    return voided.won


async def _tell_refused(
    flow: Workflow, run: RunRecord, approval: ApprovalRecord, reason: str
) -> None:
    await flow.notify(ExecutionRefused(run=run, approval=approval, reason=reason))


async def save_outcome(flow: Workflow, run: RunRecord, result: EngineResult) -> RunRecord:
    """Save the run's state as `paused` or `completed`: a compare-and-set on the version
    this worker claimed it at (a takeover moves it), which ends the run's lease."""
    saved = await flow.store.save_run_state(
        run.run_id,
        expected_version=run.version,
        state_json=await flow.encode_state(result.state),
        status="paused" if result.outcome == "paused" else "completed",
        schema_version=result.state.schema_version,
        engine=engine_stamp(result.state.engine),
    )
    flow.leases.drop(run.run_id)  # saved not working: the store ended the lease
    return saved


async def announce_outcome(
    flow: Workflow,
    saved: RunRecord,
    result: EngineResult,
    *,
    requester: str | None = None,
    resume_if_decided: ResumeIfDecided,
) -> RunRecord:
    """Tell people what the saved outcome is: the answer, or the approvals it waits for
    (requested here) and the calls a human must reconcile."""
    if result.outcome != "paused":
        flow.telemetry.run_ended(saved, status="completed")
        await flow.notify(
            RunFinished(run=saved, final_output=result.final_output, status=result.outcome)
        )
        return saved
    flow.telemetry.run_paused(saved, waiting=len(result.interruptions))
    await request_approvals(
        flow, saved, result.state, result.interruptions,
        requester=requester, resume_if_decided=resume_if_decided,
    )  # fmt: skip
    for call in result.interruptions:
        if call.status == "uncertain":
            await flow.notify(CallUncertain(run=saved, call=UncertainCall.of(saved.run_id, call)))
    return saved
