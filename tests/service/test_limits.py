"""Limits of the policy file: task length, tool calls per model turn, pending approvals
per run. Past one, nothing is stored or posted for the task (too long), or the run fails
with one clear line and no card (too many calls): one /agent command of thousands of
"and"-joined clauses once posted thousands of cards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot.errors import InputError
from bot.policy.loading import parse_policy
from bot.service.events import ApprovalRequested, RunFailed
from tests.service.service_harness import REQUESTER, Harness, kinds, start


def clauses(count: int) -> str:
    return " and ".join(f"restart s{index}" for index in range(count))


async def test_a_task_longer_than_the_limit_is_refused_before_anything_is_stored(
    harness: Harness,
) -> None:
    task = clauses(2600)
    assert len(task) > 4000
    with pytest.raises(InputError) as raised:
        await harness.service.start_run(
            agent_name=None, task=task, requester=REQUESTER, channel="C-ops"
        )
    assert str(raised.value) == (
        f"the task is {len(task)} characters long; the limit is 4000 (limits.task_chars)"
    )
    assert await harness.store.list_runs(limit=10) == []
    assert harness.notifier.events == []
    harness.service.check_task("x" * 4000)  # at the limit is fine
    with pytest.raises(InputError, match="the limit is 4000"):
        harness.service.check_task("x" * 4001)


async def test_more_calls_in_one_turn_than_the_limit_fail_the_run_with_one_line(
    harness: Harness,
) -> None:
    run = await harness.service.start_run(
        agent_name=None, task=clauses(25), requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "failed"
    assert harness.notifier.of(ApprovalRequested) == []
    (failed,) = harness.notifier.of(RunFailed)
    assert failed.error == (
        "the model asked for 25 tool calls in one turn; the limit is 20 per turn, so none "
        "of them ran (limits.tool_calls_per_turn)"
    )
    assert await harness.store.list_approvals(run_id=run.run_id) == []
    assert harness.effect_lines() == []
    assert (await kinds(harness, run.run_id))[-1] == "failed"


async def test_more_pending_approvals_than_the_limit_fail_the_run_before_any_card(
    open_harness: Callable[..., Any],
) -> None:
    policy = parse_policy("[limits]\ntool_calls_per_turn = 50\npending_approvals_per_run = 5")
    harness: Harness = await open_harness(policy=policy)
    run = await harness.service.start_run(
        agent_name=None, task=clauses(6), requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "failed"
    assert harness.notifier.of(ApprovalRequested) == []
    (failed,) = harness.notifier.of(RunFailed)
    assert failed.error == (
        "the run asked for 6 approvals at once; the limit is 5 per run, so none of its "
        "calls ran (limits.pending_approvals_per_run)"
    )
    assert await harness.store.list_approvals(run_id=run.run_id) == []

    within = await start(harness, clauses(5))  # at the limit: five cards
    assert len(await harness.pending(within.run_id)) == 5


async def test_a_follow_up_longer_than_the_limit_is_refused(
    open_harness: Callable[..., Any],
) -> None:
    harness: Harness = await open_harness(policy=parse_policy("[limits]\ntask_chars = 40"))
    run = await harness.service.start_run(
        agent_name=None, task="status api", requester=REQUESTER, channel="C-ops"
    )
    assert run.status == "completed"
    assert run.thread_ts is not None
    with pytest.raises(InputError, match="the limit is 40"):
        await harness.service.follow_up(
            channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text="status api " * 5
        )
    same = await harness.store.get_run(run.run_id)
    assert same is not None
    assert (same.status, same.version) == ("completed", run.version)
