"""Thread replies: follow-up input continues an idle run; a busy or waiting run says so."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from bot.demo import build_ops_agent
from bot.errors import NotAuthorizedError
from bot.runtime import AgentRegistry, Item, ModelResponse, ToolCall, ToolSpec
from bot.service import Busy, Continued, NotARunThread, WaitingForApproval
from tests.service.service_harness import APPROVER, REQUESTER, Harness, start
from tests.states import own_state


async def test_a_thread_reply_continues_an_idle_run(harness: Harness) -> None:
    run = await harness.service.start_run(
        agent_name="ops", task="status payments", requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "completed"
    assert run.thread_ts is not None
    other = await harness.service.follow_up(
        channel="C-ops", thread_ts="9.9", user=REQUESTER, text="deploy payments 2.0.0"
    )
    assert isinstance(other, NotARunThread)

    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text="deploy payments 2.0.0"
    )
    assert isinstance(outcome, Continued)
    assert outcome.run.status == "paused"  # the follow-up asked for an approval-needing call
    waiting = await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text="and now?"
    )
    assert isinstance(waiting, WaitingForApproval)
    assert waiting.pending == 1

    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()
    [effect] = harness.effect_lines()
    assert effect["arguments"] == {"service": "payments", "version": "2.0.0"}
    state = await own_state(harness.service, run.run_id)
    users = [item["content"] for item in state.history if item["type"] == "user"]
    assert users == ["status payments", "deploy payments 2.0.0"]


async def test_a_follow_up_while_working_is_refused_as_busy(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    claimed = await harness.store.transition_run(
        run.run_id, expected_status="paused", new_status="resuming"
    )
    assert claimed is not None
    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=str(run.thread_ts), user=REQUESTER, text="hurry up"
    )
    assert isinstance(outcome, Busy)
    assert approval.status == "pending"


async def test_a_second_pause_in_the_same_thread_asks_again(harness: Harness) -> None:
    run = await start(harness)
    [first] = await harness.pending(run.run_id)
    await harness.service.decide(first.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()

    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=str(run.thread_ts), user=REQUESTER, text="deploy payments 1.2.4"
    )
    assert isinstance(outcome, Continued)
    [second] = await harness.pending(run.run_id)
    assert second.tool_call_id != first.tool_call_id
    await harness.service.decide(second.approval_id, approve=True, decider=APPROVER, reason="2")
    await harness.service.drain()
    assert [line["arguments"]["version"] for line in harness.effect_lines()] == ["1.2.3", "1.2.4"]


class ReusedIdModel:
    """An LLM edge that reuses the tool call id `call_1` in every turn."""

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        if history[-1]["type"] == "tool_result":
            return ModelResponse(text="done")
        deploy = {"service": "payments", "version": "1.2.3"}
        return ModelResponse(
            tool_calls=[ToolCall(id="call_1", name="deploy_release", arguments=deploy)]
        )


async def test_a_reused_call_id_gets_its_own_approval_never_the_old_decision(
    open_harness: Callable[..., Any],
) -> None:
    registry = AgentRegistry([build_ops_agent(ReusedIdModel())])
    harness: Harness = await open_harness(registry=registry)
    run = await start(harness)
    [first] = await harness.pending(run.run_id)
    await harness.service.decide(first.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()

    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=str(run.thread_ts), user=REQUESTER, text="once more"
    )

    assert isinstance(outcome, Continued)
    assert outcome.run.status == "paused"
    [second] = await harness.pending(run.run_id)
    assert second.tool_call_id == first.tool_call_id == "call_1"
    assert second.execution_key != first.execution_key
    assert len(harness.effect_lines()) == 1  # the old approval did not run it
    await harness.service.decide(second.approval_id, approve=True, decider=APPROVER, reason="2")
    await harness.service.drain()
    keys = [line["execution_key"] for line in harness.effect_lines()]
    assert keys == [first.execution_key, second.execution_key]


async def test_a_follow_up_author_cannot_approve_the_calls_they_asked_for(
    harness: Harness,
) -> None:
    # Anyone in the channel may continue an idle run; whoever asked for a call may not
    # approve it, even when someone else started the run.
    run = await harness.service.start_run(
        agent_name="ops", task="status payments", requester=REQUESTER, channel="C-ops"
    )
    assert run.thread_ts is not None
    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=APPROVER, text="deploy payments 3.0.0"
    )
    assert isinstance(outcome, Continued)
    [approval] = await harness.pending(run.run_id)
    assert approval.requester == APPROVER

    with pytest.raises(NotAuthorizedError):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="mine"
        )
    assert harness.effect_lines() == []

    await harness.service.decide(
        approval.approval_id, approve=True, decider=REQUESTER, reason="reviewed"
    )
    await harness.service.drain()
    [effect] = harness.effect_lines()
    assert effect["arguments"] == {"service": "payments", "version": "3.0.0"}


class TwoStepModel:
    """An LLM edge that, asked for "two steps", deploys, then (seeing the deploy's result)
    asks for a restart: the second approval is requested by a resume, not a reply."""

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        last = history[-1]
        if last["type"] == "user":
            if "two steps" not in last["content"]:
                return ModelResponse(text="hello")
            deploy = {"service": "payments", "version": "3.0.0"}
            return ModelResponse(
                tool_calls=[ToolCall(id="a", name="deploy_release", arguments=deploy)]
            )
        if last["type"] == "tool_result" and last["name"] == "deploy_release":
            restart = {"service": "payments"}
            return ModelResponse(
                tool_calls=[ToolCall(id="b", name="restart_service", arguments=restart)]
            )
        return ModelResponse(text="done")


async def test_calls_after_a_resume_stay_with_the_follow_up_author(
    open_harness: Callable[..., Any],
) -> None:
    harness: Harness = await open_harness(registry=AgentRegistry([build_ops_agent(TwoStepModel())]))
    run = await harness.service.start_run(
        agent_name="ops", task="hi", requester=REQUESTER, channel="C-ops"
    )
    assert run.thread_ts is not None
    await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=APPROVER, text="two steps"
    )
    [deploy] = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=REQUESTER, reason="ok")
    await harness.service.drain()

    [restart] = await harness.pending(run.run_id)
    assert restart.tool_name == "restart_service"
    assert restart.requester == APPROVER  # asked for by the resumed stretch APPROVER began
    with pytest.raises(NotAuthorizedError):
        await harness.service.decide(
            restart.approval_id, approve=True, decider=APPROVER, reason="mine"
        )
