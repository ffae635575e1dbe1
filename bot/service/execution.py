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
import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import datetime
from functools import partial

from bot.canonical import digests_equal
from bot.errors import (
    AgentNotRegisteredError,
    ApprovalsError,
    KeyMissingError,
    LeaseLostError,
    LimitError,
    RunStateError,
    SchemaVersionError,
    StateUnreadableError,
)
from bot.policy.rules import ToolRule
from bot.review.snapshot import ReviewSnapshot, review_snapshot
from bot.runtime import (
    Agent,
    AgentEngine,
    AgentRun,
    EngineInfo,
    EngineResult,
    ExternalRunState,
    PendingCall,
)
from bot.service.amend import can_change, noted_agent
from bot.service.api import UncertainCall
from bot.service.audited import audit_only, record_ran, wave_through
from bot.service.authority import execution_check
from bot.service.copies import plan_request_copies, send_planned
from bot.service.events import (
    ApprovalDecided,
    ApprovalRequested,
    CallUncertain,
    ExecutionRefused,
    RunFinished,
)
from bot.service.failure import fail_run, let_go, wait_for_migration
from bot.service.last_check import ServiceJournal
from bot.service.limits import calls_per_turn_exceeded, check_pending
from bot.service.retry import transient
from bot.service.standing import apply_standing
from bot.service.windows import apply_windows
from bot.service.workflow import Workflow
from store.journal import StoreJournal
from store.records import (
    ApprovalRecord,
    EngineStamp,
    EscalationPlan,
    NewApproval,
    RunRecord,
    StandingDecision,
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

ResumeIfDecided = Callable[[Workflow, str], Awaitable[bool]]
"""bot.service.resume.resume_if_all_decided, handed in by whoever runs the agent: a
resume runs the agent through this module, so this module does not import it."""


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
    journal = ServiceJournal(
        StoreJournal(
            flow.store,
            owner=flow.worker_id,
            lease_seconds=flow.lease_seconds,
            run_lease_token=_lease_token(flow, run.run_id),
        ),
        store=flow.store,
        run_id=run.run_id,
        actor=flow.actor,
        approvals=approvals,
        authorize=partial(execution_check, flow),
        on_refused=partial(_tell_refused, flow, run),
        void=partial(void_approval, flow, run),
        on_executed=partial(record_ran, flow, run),
        clock=flow.clock,
        telemetry=flow.telemetry,
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


async def request_approvals(
    flow: Workflow,
    run: RunRecord,
    state: AgentRun,
    calls: Sequence[PendingCall],
    *,
    requester: str | None = None,
    resume_if_decided: ResumeIfDecided,
) -> list[ApprovalRecord]:
    """Approval rows (and cards) for the calls of `state` waiting for a decision.

    Idempotent: a call that already has its pending row keeps it (its card is posted only
    if it never was). Rows are keyed by the call's execution key, so a provider that
    reuses tool call ids across turns gets a row per call; a row for the same key that is
    decided or was made for other arguments fails closed rather than letting an old
    decision answer a new call. When the run's standing decisions decide the new calls,
    `resume_if_decided` resumes the run if nothing else is open."""
    waiting = [call for call in calls if call.status == "approval"]
    if not waiting:
        return []
    now = flow.clock()
    snapshots: dict[str, ReviewSnapshot] = {}  # by execution key
    planned: list[NewApproval] = []
    agent = flow.registry.get(run.agent_name, run.agent_version)
    for approval_id, call in zip(approval_ids(len(waiting)), waiting, strict=True):
        snapshot = card_snapshot(agent, state, call)
        snapshots[call.execution_key] = snapshot
        rule = flow.rule_for(call.tool_name)
        expires_at = now + rule.expires_after if rule.expires_after is not None else None
        remind_at = expires_at - rule.remind_before if expires_at and rule.reminds else None
        if rule.mode == "audit":  # decided at once: nobody to remind or escalate to
            remind_at = None
        planned.append(
            NewApproval(
                approval_id=approval_id,
                run_id=run.run_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                arguments_digest=snapshot.digest,
                snapshot=snapshot.to_json(),
                requester=requester or run.requester,
                expires_at=expires_at,
                required_approvals=rule.required_approvals,
                remind_at=remind_at,
                execution_key=call.execution_key,
                escalations=() if rule.mode == "audit" else escalation_plans(rule, now, expires_at),
                policy_fingerprint=flow.policy.fingerprint,
            )
        )
    records = await flow.store.add_approvals(planned)
    created = {approval.approval_id for approval in planned}
    for record in records:
        if record.approval_id in created:  # not a row an earlier try of this pause made
            flow.telemetry.approval_requested(record)
    for record in records:
        snapshot = snapshots[record.execution_key]
        if record.status != "pending" or not digests_equal(
            record.arguments_digest, snapshot.digest
        ):
            raise RunStateError(
                f"call {record.tool_call_id!r} of run {run.run_id} already has a "
                f"{record.status} approval for other arguments; refusing to reuse it"
            )
    standing = await flow.standing(run.run_id)
    for record in records:  # an audit-only call's card is posted once it ran
        if record.slack_ts is None and not audit_only(flow, record.tool_name):
            await _post_card(flow, run, record, snapshots[record.execution_key], standing)
    decided = await wave_through(flow, records)
    decided = (bool(standing) and await apply_standing(flow, run, records)) or decided
    arguments = {call.execution_key: call.arguments for call in waiting}
    if await apply_windows(flow, run, records, arguments) or decided:
        await resume_if_decided(flow, run.run_id)
    return records


def escalation_plans(
    rule: ToolRule, now: datetime, expires_at: datetime | None
) -> tuple[EscalationPlan, ...]:
    """The rule's escalation steps for a call requested `now`, fixed with the request
    (a step at or past the expiry would never fire: the policy refuses one, and a
    shorter default lifetime given at start-up drops it here)."""
    due = [(step, now + step.after) for step in rule.routing.escalation]
    return tuple(
        EscalationPlan(step=number, due_at=at, approvers=step.to)
        for number, (step, at) in enumerate(due, start=1)
        if expires_at is None or at < expires_at
    )


def approval_ids(count: int) -> list[str]:
    """Ids for the approvals of one pause: random (50 bits each, so two ids differ all
    along, not in a last digit), readable (Crockford's base32: no i, l, o or u), and in
    the model's order when sorted (a fixed-width index comes first), e.g. `00k7qm-3xfap9`.
    """
    width = max(2, len(_base32(max(count - 1, 0))))
    ids = []
    for index in range(count):
        random = "".join(secrets.choice(_ID_ALPHABET) for _ in range(10))
        ids.append(f"{_base32(index).rjust(width, '0')}{random[:4]}-{random[4:]}")
    return ids


_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 32)
        digits = _ID_ALPHABET[digit] + digits
        if not number:
            return digits


def engine_stamp(engine: EngineInfo | None) -> EngineStamp | None:
    """What the run row records of the engine that wrote its state (None: the core)."""
    if engine is None:
        return None
    return EngineStamp(
        name=engine.name, version=engine.version, schema_version=engine.schema_version
    )


def card_snapshot(
    agent: AgentEngine,
    state: AgentRun,
    call: PendingCall,
    *,
    keep_hidden: Collection[str] = (),
) -> ReviewSnapshot:
    """The review card's snapshot of a pending call of `state`: redacted (and what an
    earlier snapshot hid, `keep_hidden`), limited to the tool's `review_fields`, with the
    call's keyed digest, which always covers every argument; with the notes another
    engine left for the reviewer, and whether approvers may change this call's
    arguments when its engine answers that per call (bot.service.amend.can_change)."""
    tool = agent.tool_named(call.tool_name)
    shown = tool.review_fields if tool is not None else None
    notes = state.notes_for(call) if isinstance(state, ExternalRunState) else ()
    return review_snapshot(
        call.tool_name,
        call.arguments,
        digest=state.call_digest(call),
        shown_fields=shown,
        keep_hidden=keep_hidden,
        notes=notes,
        amendable=can_change(agent, state, call),
    )


async def _post_card(
    flow: Workflow,
    run: RunRecord,
    approval: ApprovalRecord,
    snapshot: ReviewSnapshot,
    standing: tuple[StandingDecision, ...],
) -> None:
    planned = await plan_request_copies(flow, run, approval)  # first: the card says where it went
    location = await flow.notify(
        ApprovalRequested(run=run, approval=approval, snapshot=snapshot, standing=standing)
    )
    if location is not None:
        channel, ts = location
        await flow.store.set_approval_message(approval.approval_id, channel=channel, ts=ts)
        await _catch_up_card(flow, run, approval.approval_id)
    send_planned(flow, run, approval, planned)


async def _catch_up_card(flow: Workflow, run: RunRecord, approval_id: str) -> None:
    """A card that waited Slack out may land after its call was decided elsewhere (the
    CLI, a DM copy, expiry): the decision's own update found no card to update then, so
    the late card is brought up to date now rather than keeping live buttons."""
    current = await flow.store.get_approval(approval_id)
    if current is not None and current.status != "pending":
        await flow.notify(ApprovalDecided(run=run, approval=current))
