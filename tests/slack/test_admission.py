"""The bound on runs being started (bot.slack.admission), through the real server: a
`/agent` beyond it is told at once that the bot is busy and starts nothing; decisions
of runs already waiting never queue behind it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.slack.admission import STARTING_RUNS, WAITING_RUNS, StartGate, start_gate_from_env
from bot.slack.messages.replies import START_BUSY_TEXT
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    card_calls,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

SLACK_DOWN = 503  # a start waits Slack out (bot.slack.patience) and keeps its place


@pytest.fixture
async def gate() -> StartGate:
    return StartGate(starting=1, waiting=1)


@pytest.fixture
async def gated(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, gate: StartGate
) -> AsyncIterator[Bot]:
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, starts=gate
    )
    try:
        yield started
    finally:
        fake_slack.come_back("chat.postMessage")
        await stop_bot(started, runner, session)


async def agent(bot: Bot, version: str) -> str:
    reply = await bot.driver.command(
        "/agent", f"deploy payments {version}", user=REQUESTER, channel=CHANNEL
    )
    assert reply.status == 200
    return reply.text


async def runs_of(bot: Bot) -> list[str]:
    return sorted(str(run.task) for run in await bot.store.list_runs(limit=100))


async def test_a_start_past_the_gate_is_told_busy_and_creates_nothing(
    gated: Bot, gate: StartGate
) -> None:
    gated.fake.go_down("chat.postMessage", status=SLACK_DOWN)
    assert await agent(gated, "1.0.1") == ""  # starting: its thread waits Slack out
    await gated.fake.wait_for("chat.postMessage", lambda call: not call.ok)
    assert await agent(gated, "1.0.2") == ""  # waiting for a turn
    assert await agent(gated, "1.0.3") == START_BUSY_TEXT  # no place left
    assert gate.admitted == 2
    assert await runs_of(gated) == ["deploy payments 1.0.1"]  # the waiting one not yet

    gated.fake.come_back("chat.postMessage")
    await gated.fake.wait_for(
        "chat.postMessage", lambda call: call in card_calls(gated.fake), count=2
    )
    roots = [call.text for call in gated.fake.calls_to("chat.postMessage") if root(call)]
    assert ["1.0.1" in text for text in roots] == [True, False]  # in arrival order
    await gated.settle()
    assert gate.admitted == 0  # both paused for approval: the places are free again
    assert await runs_of(gated) == ["deploy payments 1.0.1", "deploy payments 1.0.2"]
    assert await agent(gated, "1.0.4") == ""
    await gated.fake.wait_for(
        "chat.postMessage", lambda call: call in card_calls(gated.fake), count=3
    )
    assert "1.0.3" not in " ".join(call.text for call in gated.fake.calls_to("chat.postMessage"))


def root(call: Call) -> bool:
    """A run's root message, as Slack took it."""
    return call.ok and "thread_ts" not in call.args


@pytest.mark.parametrize("gate", [StartGate(starting=1, waiting=0)])
async def test_a_decision_goes_through_while_the_gate_is_full(gated: Bot, gate: StartGate) -> None:
    _, (card,) = await start_run(gated)  # paused for approval: its place is free
    gated.fake.go_down("chat.postMessage", status=SLACK_DOWN)
    assert await agent(gated, "2.0.0") == ""
    await gated.fake.wait_for("chat.postMessage", lambda call: not call.ok)
    assert await agent(gated, "2.0.1") == START_BUSY_TEXT  # the gate is full

    view = await open_modal(gated, card, "Approve", user=APPROVER)
    reply = await gated.driver.submit(view, user=APPROVER, reason="while busy")
    assert (reply.status, reply.text) == (200, "")
    await asyncio.wait_for(gated.effects.applied.wait(), 10)  # resumed and applied
    assert gated.effects.deploys == [("payments", "1.2.3", gated.effects.deploys[0][2])]
    assert gate.admitted == 1  # the start still waits Slack out, the decision did not


async def test_a_place_is_given_back_however_the_start_ends() -> None:
    gate = StartGate(starting=1, waiting=0)
    admission = gate.admit()
    assert admission is not None
    assert gate.admit() is None

    async def fails() -> None:
        raise RuntimeError("the start failed")

    with pytest.raises(RuntimeError):
        await admission.run(fails)
    assert gate.admitted == 0
    dropped = gate.admit()
    assert dropped is not None
    dropped.drop()
    dropped.drop()  # once only
    assert gate.admitted == 0


@pytest.mark.parametrize(
    ("starting", "waiting", "problem"),
    [(0, 4, "at least one run must be able to start"), (1, -1, "waiting is a count")],
)
def test_a_gate_that_cannot_work_is_refused(starting: int, waiting: int, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        StartGate(starting=starting, waiting=waiting)


def test_the_bounds_come_from_the_environment_with_their_defaults() -> None:
    default = start_gate_from_env({})
    taken = [default.admit() for _ in range(STARTING_RUNS + WAITING_RUNS + 1)]
    assert taken[-1] is None
    assert all(place is not None for place in taken[:-1])
    set_here = start_gate_from_env({"APPROVALS_STARTING_RUNS": "2", "APPROVALS_WAITING_RUNS": "0"})
    assert [set_here.admit() is not None for _ in range(3)] == [True, True, False]
