"""Asking for approval: the rows, their review snapshots and cards for the calls a pause
waits on, and the standing decisions, windows and audit-only rules that decide some of
them at once. A card that waited Slack out and landed after its call was decided is
brought up to date."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import datetime

from bot.canonical import digests_equal
from bot.errors import RunStateError
from bot.policy.rules import ToolRule
from bot.review.snapshot import ReviewSnapshot, review_snapshot
from bot.runtime import AgentEngine, AgentRun, EngineInfo, ExternalRunState, PendingCall
from bot.service.amend import can_change
from bot.service.audited import audit_only, wave_through
from bot.service.copies import plan_request_copies, send_planned
from bot.service.events import ApprovalDecided, ApprovalRequested
from bot.service.standing import apply_standing
from bot.service.windows import apply_windows
from bot.service.workflow import Workflow
from store.records import (
    ApprovalRecord,
    EngineStamp,
    EscalationPlan,
    NewApproval,
    RunRecord,
    StandingDecision,
)

ResumeIfDecided = Callable[[Workflow, str], Awaitable[bool]]
"""bot.service.resume.resume_if_all_decided, handed in by whoever runs the agent: a
resume runs the agent through bot.service.execution, so neither module imports it."""


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
