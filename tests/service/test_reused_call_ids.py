"""A model that numbers its tool calls call_0, call_1 ... afresh every turn (as some
OpenAI-compatible local servers do): each call gets its own approval, keyed by its
execution key, and each approved call runs once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bot.demo import build_ops_agent
from bot.runtime import AgentRegistry, Item, ModelResponse, ToolCall, ToolSpec
from tests.service.service_harness import APPROVER, Harness, start


class CallZeroEveryTurn:
    """The LLM edge: deploy in turn 1, restart in turn 2, both as `call_0`; then done."""

    async def respond(
        self, *, instructions: str, history: Sequence[Item], tools: Sequence[ToolSpec]
    ) -> ModelResponse:
        turns = sum(1 for item in history if item["type"] == "assistant")
        if turns == 0:
            deploy = {"service": "payments", "version": "1.2.3"}
            return ModelResponse(
                tool_calls=[ToolCall(id="call_0", name="deploy_release", arguments=deploy)]
            )
        if turns == 1:
            restart = {"service": "payments"}
            return ModelResponse(
                tool_calls=[ToolCall(id="call_0", name="restart_service", arguments=restart)]
            )
        return ModelResponse(text="deployed and restarted")


async def test_each_turns_call_0_is_asked_and_run_once(open_harness: Callable[..., Any]) -> None:
    registry = AgentRegistry([build_ops_agent(CallZeroEveryTurn())])
    harness: Harness = await open_harness(registry=registry)
    run = await start(harness)
    [deploy] = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()

    [restart] = await harness.pending(run.run_id)
    assert (deploy.tool_call_id, restart.tool_call_id) == ("call_0", "call_0")
    assert (deploy.tool_name, restart.tool_name) == ("deploy_release", "restart_service")
    assert restart.execution_key != deploy.execution_key
    await harness.service.decide(restart.approval_id, approve=True, decider=APPROVER, reason="2")
    await harness.service.drain()

    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    lines = harness.effect_lines()
    assert [line["tool"] for line in lines] == ["deploy_release", "restart_service"]
    assert [line["execution_key"] for line in lines] == [
        deploy.execution_key,
        restart.execution_key,
    ]
    assert harness.notifier.answer(run.run_id) == "deployed and restarted"


async def test_revoking_the_first_turns_approval_leaves_the_second_turns_alone(
    open_harness: Callable[..., Any],
) -> None:
    registry = AgentRegistry([build_ops_agent(CallZeroEveryTurn())])
    harness: Harness = await open_harness(registry=registry)
    run = await start(harness)
    [deploy] = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()
    [restart] = await harness.pending(run.run_id)

    revoked = await harness.service.revoke(restart.approval_id, actor=APPROVER, reason="later")

    assert revoked.status == "revoked"
    first = await harness.store.get_approval(deploy.approval_id)
    assert first is not None
    assert first.status == "approved"  # it ran; the same call id of turn 2 is another call
