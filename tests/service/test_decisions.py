"""Approve, reject, races and refusals through the real service, store and ops agent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError
from bot.service import DecisionResult
from tests.service.service_harness import APPROVER, OPS_TOKEN, REQUESTER, Harness, kinds, start
from tests.states import own_state


async def test_approve_runs_the_call_once_and_answers(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    assert harness.effect_lines() == []  # paused before any effect
    [(carded, snapshot)] = harness.notifier.cards
    assert carded.approval_id == approval.approval_id
    assert snapshot.digest == approval.arguments_digest
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    assert stored.slack_ts is not None

    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="CR-42 change window"
    )
    assert result.resume_started
    await harness.service.drain()

    [effect] = harness.effect_lines()
    assert effect["tool"] == "deploy_release"
    assert effect["arguments"] == {"service": "payments", "version": "1.2.3"}
    final = await harness.store.get_run(run.run_id)
    assert final is not None
    assert final.status == "completed"
    assert "payments" in harness.notifier.answer(run.run_id)
    state = await own_state(harness.service, run.run_id)
    metadata = state.approval_metadata[approval.tool_call_id]
    assert (metadata.approver_id, metadata.reason) == (APPROVER, "CR-42 change window")
    trail = await kinds(harness, run.run_id)
    assert [k for k in trail if k in ("requested", "decided", "resumed", "executed")] == [
        "requested",
        "decided",
        "resumed",
        "executed",
    ]
    assert OPS_TOKEN not in state.to_json()


async def test_reject_runs_nothing_and_only_the_message_reaches_the_model(
    harness: Harness,
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    message = "Not now: the payments freeze ends on Friday."
    reason = "audit-only-reason-7d1f freeze policy"

    await harness.service.decide(
        approval.approval_id, approve=False, decider=APPROVER, reason=reason, message=message
    )
    await harness.service.drain()

    assert harness.effect_lines() == []
    answer = harness.notifier.answer(run.run_id)
    assert message in answer
    assert reason not in answer
    state = await own_state(harness.service, run.run_id)
    assert reason not in json.dumps(state.history)
    assert state.approval_metadata[approval.tool_call_id].reason == reason


async def test_a_second_decision_is_refused_with_the_winner(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")

    with pytest.raises(AlreadyDecidedError) as refused:
        await harness.service.decide(
            approval.approval_id, approve=False, decider="U-late", reason="too late"
        )
    assert refused.value.status == "approved"
    assert refused.value.decider == APPROVER
    assert refused.value.decided_at is not None
    await harness.service.drain()
    assert len(harness.effect_lines()) == 1


async def test_concurrent_decisions_have_exactly_one_winner(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)

    outcomes = await asyncio.gather(
        *(
            harness.service.decide(
                approval.approval_id, approve=index % 2 == 0, decider=f"U-{index}", reason="race"
            )
            for index in range(6)
        ),
        return_exceptions=True,
    )
    await harness.service.drain()

    winners = [o for o in outcomes if isinstance(o, DecisionResult)]
    losers = [o for o in outcomes if isinstance(o, AlreadyDecidedError)]
    assert len(winners) == 1
    assert len(losers) == 5
    winner = winners[0].approval
    assert all(loser.decider == winner.decider for loser in losers)
    assert len(harness.effect_lines()) == (1 if winner.status == "approved" else 0)
    assert (await kinds(harness, run.run_id)).count("decided") == 1
    assert (await kinds(harness, run.run_id)).count("resumed") == 1


async def test_the_requester_may_not_decide_their_own_call(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)

    with pytest.raises(NotAuthorizedError, match="someone else"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=REQUESTER, reason="mine"
        )
    assert [a.status for a in await harness.store.list_approvals(run_id=run.run_id)] == ["pending"]
    assert "decided" not in await kinds(harness, run.run_id)


@pytest.mark.parametrize("reason", ["", "   "])
async def test_a_decision_needs_a_reason(harness: Harness, reason: str) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)

    with pytest.raises(InputError, match="reason is required"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason=reason
        )
    assert [a.status for a in await harness.store.list_approvals(run_id=run.run_id)] == ["pending"]


async def test_an_unknown_approval_is_named(harness: Harness) -> None:
    with pytest.raises(InputError, match="no approval with id 'nope'"):
        await harness.service.decide("nope", approve=True, decider=APPROVER, reason="x")


async def test_two_pending_calls_resume_only_after_both_are_decided(harness: Harness) -> None:
    run = await start(harness, "deploy payments 1.2.3 and restart api")
    first, second = await harness.pending(run.run_id)
    assert [first.tool_name, second.tool_name] == ["deploy_release", "restart_service"]

    one = await harness.service.decide(
        first.approval_id, approve=True, decider=APPROVER, reason="first"
    )
    await harness.service.drain()
    assert not one.resume_started
    assert harness.effect_lines() == []
    paused = await harness.store.get_run(run.run_id)
    assert paused is not None
    assert paused.status == "paused"

    two = await harness.service.decide(
        second.approval_id, approve=False, decider="U-other", reason="second", message="no restart"
    )
    await harness.service.drain()
    assert two.resume_started
    assert [line["tool"] for line in harness.effect_lines()] == [first.tool_name]
    assert "no restart" in harness.notifier.answer(run.run_id)


async def test_two_replicas_racing_on_one_database_run_the_call_once(
    open_harness: Callable[..., Any],
) -> None:
    one: Harness = await open_harness()
    two: Harness = await open_harness(worker_id="replica-two")
    run = await start(one)
    [approval] = await one.pending(run.run_id)

    outcomes = await asyncio.gather(
        one.service.decide(approval.approval_id, approve=True, decider="U-a", reason="a"),
        two.service.decide(approval.approval_id, approve=True, decider="U-b", reason="b"),
        return_exceptions=True,
    )
    await asyncio.gather(one.service.drain(), two.service.drain())

    assert sorted(type(o).__name__ for o in outcomes) == ["AlreadyDecidedError", "DecisionResult"]
    assert len(one.effect_lines()) == 1
    assert (await kinds(one, run.run_id)).count("resumed") == 1
    done = await one.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
