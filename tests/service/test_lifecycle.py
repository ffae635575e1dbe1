"""Restart, digest mismatch, expiry, failures, recovery and refused contexts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError, ContextSerializationError
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    Agent,
    AgentRegistry,
    ScriptedModel,
)
from bot.service.applying import EXPIRED_MESSAGE
from bot.service.events import ApprovalDecided, Event, Location, RunFinished
from tests.service.service_harness import (
    APPROVER,
    REQUESTER,
    Harness,
    RecordingNotifier,
    close_harness,
    kinds,
    start,
    swap_paused_version,
)


async def test_a_restart_after_the_pause_loses_nothing(open_harness: Callable[..., Any]) -> None:
    before: Harness = await open_harness()
    run = await start(before)
    [approval] = await before.pending(run.run_id)
    await close_harness(before)  # the process stops while the run waits for a human

    after: Harness = await open_harness()
    assert await after.service.recover() == 0  # a paused run waiting for people is left alone
    result = await after.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="after restart"
    )
    assert result.resume_started
    await after.service.drain()
    assert len(after.effect_lines()) == 1
    assert "payments" in after.notifier.answer(run.run_id)


async def test_changed_arguments_void_the_approval_and_ask_again(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    # Someone able to write the store swaps the version after the human saw the card.
    await swap_paused_version(harness, run.run_id, "6.6.6")

    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="looked fine"
    )
    assert result.resume_started
    await harness.service.drain()

    assert harness.effect_lines() == []
    assert "digest_mismatch" in await kinds(harness, run.run_id)
    voided = await harness.store.get_approval(approval.approval_id)
    assert voided is not None
    assert voided.status == "revoked"
    [again] = await harness.pending(run.run_id)
    assert again.tool_call_id == approval.tool_call_id
    assert again.arguments_digest != approval.arguments_digest
    assert harness.notifier.cards[-1][1].arguments["version"] == "6.6.6"
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"

    await harness.service.decide(again.approval_id, approve=False, decider=APPROVER, reason="no")
    await harness.service.drain()
    assert harness.effect_lines() == []
    assert harness.notifier.finished


async def test_an_expired_approval_never_runs(open_harness: Callable[..., Any]) -> None:
    now = [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)]
    harness: Harness = await open_harness(clock=lambda: now[0], approval_ttl=timedelta(minutes=30))
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    now[0] += timedelta(minutes=31)

    with pytest.raises(AlreadyDecidedError) as refused:
        await harness.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="late"
        )
    assert refused.value.status == "expired"
    await harness.service.drain()
    assert harness.effect_lines() == []
    assert EXPIRED_MESSAGE in harness.notifier.answer(run.run_id)
    assert [a.status for a in harness.notifier.decided] == ["expired"]


async def test_a_model_failure_fails_the_run_with_a_clear_message(
    open_harness: Callable[..., Any],
) -> None:
    broken = Agent(name="ops", instructions="-", tools=[], model=ScriptedModel([]))
    harness: Harness = await open_harness(registry=AgentRegistry([broken]))
    run = await harness.service.start_run(
        agent_name=None, task="anything", requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "failed"
    [(failed_run, error)] = harness.notifier.failed
    assert failed_run == run.run_id
    assert "ModelError" in error
    assert "script exhausted" in error
    assert "failed" in await kinds(harness, run.run_id)


async def test_a_context_holding_a_secret_is_refused_before_anything_is_stored(
    harness: Harness,
) -> None:
    with pytest.raises(ContextSerializationError, match=r"context\.api\.token"):
        await harness.service.start_run(
            agent_name=None,
            task="status payments",
            requester=REQUESTER,
            channel="C-ops",
            context={"tenant": "acme", "api": {"token": "xoxb-1234567890-abcdefghijkl"}},
        )
    assert await harness.store.list_runs() == []
    assert harness.notifier.started == []


async def test_recover_resumes_a_run_whose_last_decision_never_claimed_it(
    harness: Harness,
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    # The process died between recording the decision and claiming the resume.
    outcome = await harness.store.decide(
        approval.approval_id, decision="approved", decider=APPROVER, reason="ok"
    )
    assert outcome.won

    assert await harness.service.recover() == 1
    await harness.service.drain()
    assert len(harness.effect_lines()) == 1
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"


async def test_recover_fails_a_run_left_running(harness: Harness) -> None:
    run = await start(harness)
    await harness.store.transition_run(run.run_id, expected_status="paused", new_status="running")

    assert await harness.service.recover() == 1
    failed = await harness.store.get_run(run.run_id)
    assert failed is not None
    assert failed.status == "failed"
    assert "restarted" in harness.notifier.failed[0][1]


async def test_expire_due_expires_overdue_approvals_and_finishes_the_run(
    open_harness: Callable[..., Any],
) -> None:
    now = [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)]
    harness: Harness = await open_harness(clock=lambda: now[0], approval_ttl=timedelta(minutes=5))
    run = await start(harness)
    assert await harness.service.expire_due() == []
    now[0] += timedelta(minutes=6)

    [expired] = await harness.service.expire_due()
    await harness.service.drain()

    assert expired.status == "expired"
    assert harness.effect_lines() == []
    assert EXPIRED_MESSAGE in harness.notifier.answer(run.run_id)
    assert "expired" in await kinds(harness, run.run_id)


class FlakyNotifier(RecordingNotifier):
    """Slack is down for card updates and answers."""

    async def notify(self, event: Event) -> Location | None:
        if isinstance(event, ApprovalDecided | RunFinished):
            raise ConnectionError("slack unreachable")
        return await super().notify(event)


async def test_a_failing_notifier_does_not_undo_a_decision(
    open_harness: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    harness: Harness = await open_harness(notifier=FlakyNotifier())
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)

    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="ok"
    )
    await harness.service.drain()

    assert result.approval.status == "approved"
    assert len(harness.effect_lines()) == 1
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert "notifier.run_finished failed" in caplog.text


async def test_a_repeated_resume_reuses_the_recorded_result(harness: Harness) -> None:
    run = await start(harness)
    paused_json = (await harness.service.load_state(run.run_id)).to_json()
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()
    [effect] = harness.effect_lines()
    # As if the worker died after the ledger recorded the result but before it saved the
    # finished state: the paused state is back, the run is left `resuming`.
    done = await harness.store.get_run(run.run_id)
    assert done is not None
    await harness.store.save_run_state(
        run.run_id,
        expected_version=done.version,
        state_json=paused_json,
        status="resuming",
        schema_version=CURRENT_SCHEMA_VERSION,
    )

    assert await harness.service.recover() == 1
    await harness.service.drain()

    assert harness.effect_lines() == [effect]  # the tool did not run again
    first_answer, second_answer = (text for _, text, _ in harness.notifier.finished)
    assert first_answer == second_answer
    assert (await kinds(harness, run.run_id)).count("executed") == 1


class FinishSignal(RecordingNotifier):
    """Sets `done` when a run finishes, so a test can wait for background work."""

    def __init__(self) -> None:
        super().__init__()
        self.done = asyncio.Event()

    async def notify(self, event: Event) -> Location | None:
        answer = await super().notify(event)
        if isinstance(event, RunFinished):
            self.done.set()
        return answer


async def test_the_expiry_sweeper_finishes_runs_nobody_decided(
    open_harness: Callable[..., Any],
) -> None:
    now = [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)]
    notifier = FinishSignal()
    harness: Harness = await open_harness(
        clock=lambda: now[0], approval_ttl=timedelta(minutes=5), notifier=notifier
    )
    run = await start(harness)
    now[0] += timedelta(minutes=6)

    harness.service.start_expiry_sweeper(every_seconds=0.01)
    await asyncio.wait_for(notifier.done.wait(), timeout=10)
    await harness.service.aclose(timeout=5)

    assert EXPIRED_MESSAGE in notifier.answer(run.run_id)
    assert harness.effect_lines() == []
