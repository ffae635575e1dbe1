"""A conversation with an agent: the run a task starts, and the thread replies after it.

`start_run` creates the run, tells people where it lives (`RunStarted`, whose answer is
the run's thread) and runs the agent until it completes, fails or pauses. `follow_up`
takes a message in that thread as new input once the run is idle: it claims the run
(compare-and-set on its status, with this worker's lease) and runs the agent again; a
run that is busy, waiting for decisions, retrying or closed says so instead.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from bot.credentials import redact_text
from bot.errors import ApprovalsError, InputError
from bot.runtime import AgentEngine, AgentRun
from bot.service.answers import (
    Busy,
    Closed,
    Continued,
    FollowUpOutcome,
    NotARunThread,
    Retrying,
    WaitingForApproval,
)
from bot.service.asking import engine_stamp
from bot.service.events import RunStarted
from bot.service.execution import execute
from bot.service.leases import claim, leave_working
from bot.service.limits import checked_task
from bot.service.resume import resume_if_all_decided
from bot.service.workflow import Workflow
from store.records import RunRecord


async def start_run(
    flow: Workflow,
    *,
    agent_name: str,
    task: str,
    requester: str,
    channel: str | None,
    context: Any,
    run_id: str | None = None,
) -> RunRecord:
    """Start a run of the latest version of `agent_name` (see `ApprovalService.start_run`)."""
    text = checked_task(flow.policy.limits, task)
    if not requester.strip():
        raise InputError("a run needs a requester")
    origin = flow.origin
    if origin is None:
        raise InputError("operators do not start runs; use Slack or the demo")
    agent = flow.registry.latest(agent_name)
    # off the loop: an engine may import its framework on first use (seconds)
    new_id = run_id or uuid.uuid4().hex
    state = await asyncio.to_thread(agent.new_state, text, run_id=new_id, context=context)
    state_json = await flow.encode_state(state)  # refuses secrets
    run = await flow.store.create_run(
        run_id=state.run_id,
        agent_name=agent.name,
        agent_version=agent.version,
        schema_version=state.schema_version,
        engine=engine_stamp(state.engine),
        state_json=state_json,
        status="running",
        channel=channel,
        requester=requester,
        origin=origin,
        task=redact_text(text),
        lease=flow.leases.terms,
    )
    flow.leases.hold_new_run(run)
    flow.telemetry.run_started(run)
    thread = await flow.notify(RunStarted(run=run, task=text))
    if thread is not None:
        await flow.store.set_run_thread(run.run_id, channel=thread[0], thread_ts=thread[1])
        run = await flow.require_run(run.run_id)
    return await execute(flow, run, agent, state, resume_if_decided=resume_if_all_decided)


async def follow_up(
    flow: Workflow, *, channel: str, thread_ts: str, user: str, text: str
) -> FollowUpOutcome:
    """See `ApprovalService.follow_up`."""
    run = await flow.store.find_run_by_thread(channel, thread_ts)
    if run is None:
        return NotARunThread()
    not_idle = await _why_not_idle(flow, run)
    if not_idle is not None:
        return not_idle
    if not text.strip():
        raise InputError("the message is empty")
    checked_task(flow.policy.limits, text)
    claimed = await claim(
        flow.store, flow.leases, run.run_id, expected_status=run.status, new_status="running"
    )
    if claimed is None:
        return Busy(run=run)
    state, agent = await _load_with_reply(flow, run, text.strip())
    await flow.store.append_audit(
        "follow_up", actor=user, run_id=run.run_id, detail={"chars": len(text)}
    )
    resumed = await execute(
        flow, claimed, agent, state, requester=user, resume_if_decided=resume_if_all_decided
    )
    return Continued(run=resumed)


async def _why_not_idle(flow: Workflow, run: RunRecord) -> FollowUpOutcome | None:
    """What a reply to a run that cannot take input now is told (None: it can)."""
    if flow.stalled.troubled(run.run_id):
        return Retrying(run=run)
    if run.status == "paused":
        pending = await flow.store.list_approvals(run_id=run.run_id, status="pending")
        return WaitingForApproval(run=run, pending=len(pending))
    if run.status in ("running", "resuming"):
        return Busy(run=run)
    if run.status == "cancelled" or run.purged_at is not None:
        return Closed(run=run)
    return None


async def _load_with_reply(
    flow: Workflow, run: RunRecord, text: str
) -> tuple[AgentRun, AgentEngine]:
    """The claimed run's state with the reply appended, and its agent; when either cannot
    be had, the run goes back to the status it had and the error propagates."""
    try:
        state = await flow.load_state(run.run_id)
        state.append_user_message(text)
        return state, flow.registry.get(state.agent_name, state.agent_version)
    except ApprovalsError:
        await leave_working(
            flow.store, flow.leases, run.run_id,
            new_status=run.status,
        )  # fmt: skip
        raise
