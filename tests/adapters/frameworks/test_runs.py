"""ops-langgraph and ops-pydantic through the service: a run pauses before any effect,
is decided and resumes with the guarantees of the bot's own runs (the digest on the
card, the ledger, approve with changes, the approver's identity beside the framework's
state, the model told the message only)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.runtime import ExternalRunState
from store.records import RunRecord
from tests.adapters.frameworks.support import AGENTS
from tests.service.service_harness import APPROVER, REQUESTER, Harness

pytestmark = pytest.mark.parametrize("agent", AGENTS)


async def start(harness: Harness, agent: str, task: str = "deploy payments 1.2.3") -> RunRecord:
    run = await harness.service.start_run(
        agent_name=agent, task=task, requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "paused"
    return run


async def engine_state(harness: Harness, run_id: str) -> ExternalRunState:
    state = await harness.service.load_state(run_id)
    assert isinstance(state, ExternalRunState)
    return state


async def test_a_run_pauses_before_any_effect_and_is_stored_sealed(
    harness: Harness, agent: str
) -> None:
    run = await start(harness, agent)

    assert harness.effect_lines() == []
    assert run.engine is not None
    [approval] = await harness.pending(run.run_id)
    [(card, snapshot)] = harness.notifier.cards
    state = await engine_state(harness, run.run_id)
    [call] = state.get_interruptions()
    assert (approval.tool_name, approval.tool_call_id) == ("deploy_release", call.tool_call_id)
    assert approval.execution_key == call.execution_key
    assert card.arguments_digest == snapshot.digest == state.call_digest(call)
    assert json.loads(approval.snapshot)["arguments"] == {"service": "payments", "version": "1.2.3"}
    assert state.engine.name == run.engine.name


async def test_approved_it_runs_once_through_the_ledger(harness: Harness, agent: str) -> None:
    run = await start(harness, agent)
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
    entries = {e.execution_key: e for e in await harness.store.ledger_entries(run_id=run.run_id)}
    assert entries[approval.execution_key].state == "succeeded"
    state = await engine_state(harness, run.run_id)
    [note] = state.approval_metadata.values()
    assert (note.approver_id, note.reason) == (APPROVER, "CR-7")


async def test_rejected_the_model_sees_the_message_never_the_reason(
    harness: Harness, agent: str
) -> None:
    run = await start(harness, agent)
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
    assert "Deploys are frozen until Monday." in harness.notifier.answer(run.run_id)
    state = await engine_state(harness, run.run_id)
    conversation = _framework_text(state)  # what the model was given and said
    assert "Deploys are frozen until Monday." in conversation
    assert "CAB-12" not in conversation
    [note] = state.approval_metadata.values()
    assert (note.approver_id, note.reason) == (APPROVER, "CAB-12 freeze (internal)")


async def test_approved_with_changes_it_runs_the_changed_arguments(
    harness: Harness, agent: str
) -> None:
    run = await start(harness, agent)
    [approval] = await harness.pending(run.run_id)

    await harness.service.approve_with_changes(
        approval.approval_id,
        decider=APPROVER,
        reason="the known-good build",
        arguments={"version": "1.2.2"},
    )
    await harness.service.drain()

    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    [line] = harness.effect_lines()
    assert line["arguments"] == {"service": "payments", "version": "1.2.2"}
    changed = await harness.store.get_approval(approval.approval_id)
    assert changed is not None
    assert changed.amended_by == APPROVER
    assert line["arguments_digest"] == changed.arguments_digest != approval.arguments_digest
    answer = harness.notifier.answer(run.run_id)
    assert "deployed payments 1.2.2" in answer
    assert "changed this call's arguments" in answer  # the model was told


async def test_two_calls_in_one_turn_are_decided_one_by_one(harness: Harness, agent: str) -> None:
    run = await start(harness, agent, "deploy payments 1.2.3 and restart payments")
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


async def test_a_follow_up_continues_the_conversation(harness: Harness, agent: str) -> None:
    run = await start(harness, agent)
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


async def test_a_restart_between_pause_and_decision_loses_nothing(
    open_harness: Callable[..., Any], agent: str
) -> None:
    first: Harness = await open_harness()
    run = await start(first, agent)
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


def _framework_text(state: ExternalRunState) -> str:
    """What the framework's own state says, as text (LangGraph's checkpoint is msgpack
    inside base64: decoded here)."""
    engine_state: Any = state.engine_state
    checkpoint = engine_state.get("checkpoint")
    if checkpoint is None:
        return json.dumps(engine_state)
    blobs = [checkpoint["checkpoint"], *(write[2] for write in checkpoint["writes"])]
    return " ".join(base64.b64decode(blob[1]).decode("utf-8", "replace") for blob in blobs)
