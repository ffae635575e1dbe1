"""ops-openai through the service: an SDK agent pauses, is decided and resumes with the
guarantees of the bot's own runs (digest on the card, the ledger, approver identity kept
beside the SDK state, the model told the message only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.adapters.openai_agents import SDK_SCHEMA_VERSION, SDK_VERSION
from bot.errors import InputError
from bot.runtime import ExternalRunState
from store.records import EngineStamp, RunRecord
from tests.service.service_harness import APPROVER, REQUESTER, Harness

SDK_ENGINE = EngineStamp(
    name="openai-agents", version=SDK_VERSION, schema_version=SDK_SCHEMA_VERSION
)


async def start_sdk(harness: Harness, task: str = "deploy payments 1.2.3") -> RunRecord:
    run = await harness.service.start_run(
        agent_name="ops-openai", task=task, requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "paused"
    return run


async def sdk_state(harness: Harness, run_id: str) -> ExternalRunState:
    state = await harness.service.load_state(run_id)
    assert isinstance(state, ExternalRunState)
    return state


async def test_a_paused_sdk_run_is_stored_sealed_with_its_sdk_version(harness: Harness) -> None:
    run = await start_sdk(harness)

    assert (run.agent_name, run.engine) == ("ops-openai", SDK_ENGINE)
    [approval] = await harness.pending(run.run_id)
    [(card, snapshot)] = harness.notifier.cards
    state = await sdk_state(harness, run.run_id)
    [call] = state.get_interruptions()
    assert (approval.tool_name, approval.tool_call_id) == ("deploy_release", call.tool_call_id)
    assert approval.execution_key == call.execution_key
    assert card.arguments_digest == snapshot.digest == state.call_digest(call)
    assert json.loads(approval.snapshot)["arguments"] == {"service": "payments", "version": "1.2.3"}
    # the SDK's own state is inside, as the SDK wrote it
    assert state.engine_state["paused"]["$schemaVersion"] == SDK_SCHEMA_VERSION


async def test_approved_it_runs_once_through_the_ledger(harness: Harness) -> None:
    run = await start_sdk(harness)
    [approval] = await harness.pending(run.run_id)

    await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="CR-7"
    )
    await harness.service.drain()

    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    [line] = harness.effect_lines()
    assert line["execution_key"] == approval.execution_key
    assert line["arguments_digest"] == approval.arguments_digest  # what the card showed
    assert "deployed payments 1.2.3" in harness.notifier.answer(run.run_id)
    [entry] = await harness.store.ledger_entries(run_id=run.run_id)
    assert (entry.execution_key, entry.state) == (approval.execution_key, "succeeded")
    state = await sdk_state(harness, run.run_id)
    [note] = state.approval_metadata.values()
    assert (note.approver_id, note.reason) == (APPROVER, "CR-7")


async def test_rejected_the_model_sees_the_message_never_the_reason(harness: Harness) -> None:
    run = await start_sdk(harness)
    [approval] = await harness.pending(run.run_id)

    await harness.service.decide(
        approval.approval_id,
        approve=False,
        decider=APPROVER,
        reason="CAB-12 freeze (internal)",
        message="Deploys are frozen until Monday.",
    )
    await harness.service.drain()

    assert harness.effect_lines() == []
    answer = harness.notifier.answer(run.run_id)
    assert "Deploys are frozen until Monday." in answer
    state = await sdk_state(harness, run.run_id)
    conversation = json.dumps(state.engine_state)
    assert "Deploys are frozen until Monday." in conversation
    assert "CAB-12" not in conversation
    [note] = state.approval_metadata.values()
    assert (note.approver_id, note.reason) == (APPROVER, "CAB-12 freeze (internal)")


async def test_two_calls_in_one_turn_are_decided_one_by_one(harness: Harness) -> None:
    run = await start_sdk(harness, "deploy payments 1.2.3 and restart payments")
    deploy, restart = sorted(await harness.pending(run.run_id), key=lambda a: a.tool_name)
    assert (deploy.tool_name, restart.tool_name) == ("deploy_release", "restart_service")

    await harness.service.decide(deploy.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"  # the other call still waits
    assert harness.effect_lines() == []
    await harness.service.decide(
        restart.approval_id, approve=False, decider=APPROVER, reason="no", message="Not now."
    )
    await harness.service.drain()

    assert [line["tool"] for line in harness.effect_lines()] == ["deploy_release"]
    answer = harness.notifier.answer(run.run_id)
    assert "deployed payments 1.2.3" in answer
    assert "Not now." in answer


async def test_a_restart_between_pause_and_decision_loses_nothing(
    open_harness: Callable[..., Any],
) -> None:
    first: Harness = await open_harness()
    run = await start_sdk(first)
    [approval] = await first.pending(run.run_id)
    await first.service.aclose()
    await first.store.close()
    first.closed = True

    again: Harness = await open_harness()
    await again.service.recover()
    await again.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await again.service.drain()

    done = await again.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert len(again.effect_lines()) == 1


async def test_approve_with_changes_is_not_offered_for_sdk_runs(harness: Harness) -> None:
    run = await start_sdk(harness)
    [approval] = await harness.pending(run.run_id)

    with pytest.raises(InputError, match="not offered for runs of openai-agents agents"):
        await harness.service.approve_with_changes(
            approval.approval_id,
            decider=APPROVER,
            reason="smaller step",
            arguments={"version": "1.2.2"},
        )

    still = await harness.store.get_approval(approval.approval_id)
    assert still is not None
    assert (still.status, still.arguments_digest) == ("pending", approval.arguments_digest)
    state = await sdk_state(harness, run.run_id)
    assert [call.arguments["version"] for call in state.pending_calls()] == ["1.2.3"]


async def test_a_follow_up_continues_the_sdk_conversation(harness: Harness) -> None:
    run = await start_sdk(harness)
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="1")
    await harness.service.drain()
    current = await harness.store.get_run(run.run_id)
    assert current is not None

    await harness.service.follow_up(
        channel="C-ops",
        thread_ts=str(current.thread_ts),
        user=REQUESTER,
        text="deploy payments 1.2.4",
    )

    [second] = await harness.pending(run.run_id)
    assert second.execution_key != approval.execution_key
    await harness.service.decide(second.approval_id, approve=True, decider=APPROVER, reason="2")
    await harness.service.drain()
    assert [line["arguments"]["version"] for line in harness.effect_lines()] == ["1.2.3", "1.2.4"]
