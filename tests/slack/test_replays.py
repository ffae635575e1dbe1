"""Replays and redeliveries, through the real Bolt app with signed requests: the same
signed request is answered once however often it is sent and whichever of two bots on
one database it reaches; a redelivered event reaching the other bot is dropped."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bot.slack.dedupe import LocalMemory
from store.crypto import KeyRing
from tests.slack.fake_slack import APP_ID, TEAM_ID, FakeSlack
from tests.slack.slack_harness import CHANNEL, REQUESTER, Bot, start_bot, stop_bot

FORM = "application/x-www-form-urlencoded"


def agent_command(task: str, trigger: str) -> str:
    return urlencode(
        {
            "token": "deprecated",
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "channel_id": CHANNEL,
            "user_id": REQUESTER,
            "command": "/agent",
            "text": task,
            "trigger_id": trigger,
            "response_url": "https://hooks.slack.com/commands/T1/1/x",
        }
    )


def runs_in(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [row[0] for row in connection.execute("SELECT task FROM runs ORDER BY created_at")]


@pytest.fixture
async def two_bots(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> AsyncIterator[tuple[Bot, Bot]]:
    """Two bots (each its own store, service and server) on one database file."""
    database = tmp_path / "approvals.db"
    first = await start_bot(fake_slack, database, keyring)
    second = await start_bot(fake_slack, database, keyring)
    try:
        yield first[0], second[0]
    finally:
        await stop_bot(*second)
        await stop_bot(*first)


async def test_the_same_signed_request_sent_three_times_makes_one_run(
    bot: Bot, tmp_path: Path
) -> None:
    body = agent_command("status payments", "trigger.1")
    timestamp = str(int(time.time()))
    replies = [
        await bot.driver.post(body, content_type=FORM, timestamp=timestamp) for _ in range(3)
    ]
    await bot.settle()
    assert [(reply.status, reply.text) for reply in replies] == [(200, "")] * 3
    assert runs_in(tmp_path / "approvals.db") == ["status payments"]
    roots = [c for c in bot.fake.calls_to("chat.postMessage") if "status payments" in c.text]
    assert len(roots) == 1

    # A new request (Slack signs each one anew) is not a replay.
    await bot.driver.post(agent_command("status payments", "trigger.2"), content_type=FORM)
    await bot.settle()
    assert runs_in(tmp_path / "approvals.db") == ["status payments"] * 2


async def test_a_replay_reaching_the_other_bot_is_answered_once(
    two_bots: tuple[Bot, Bot], tmp_path: Path
) -> None:
    first, second = two_bots
    body = agent_command("status payments", "trigger.1")
    timestamp = str(int(time.time()))
    original = await first.driver.post(body, content_type=FORM, timestamp=timestamp)
    replay = await second.driver.post(body, content_type=FORM, timestamp=timestamp)
    await first.settle()
    await second.settle()
    assert (original.status, replay.status, replay.text) == (200, 200, "")
    assert runs_in(tmp_path / "approvals.db") == ["status payments"]


async def test_a_redelivered_event_reaching_the_other_bot_is_dropped(
    two_bots: tuple[Bot, Bot],
) -> None:
    first, second = two_bots
    event = {"type": "app_home_opened", "user": REQUESTER, "tab": "home"}
    assert (await first.driver.event(event, event_id="Ev0SHARED1")).status == 200
    await first.fake.wait_for("views.publish")
    # Slack's retry is signed anew (another signature: here another body) and may reach
    # any replica; only its event id says it is the same event.
    again = await second.driver.event(
        event, event_id="Ev0SHARED1", retry_num=1, fields={"event_time": 1}
    )
    await first.settle()
    await second.settle()
    assert again.status == 200
    assert len(first.fake.calls_to("views.publish")) == 1
    await second.driver.event(event, event_id="Ev0OTHER01")  # a new event is handled
    await second.fake.wait_for("views.publish", count=2)


async def test_while_the_database_cannot_answer_the_process_remembers_for_itself(
    bot: Bot, tmp_path: Path
) -> None:
    body = agent_command("help", "trigger.1")
    timestamp = str(int(time.time()))
    other = sqlite3.connect(tmp_path / "approvals.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the database
        first = await bot.driver.post(body, content_type=FORM, timestamp=timestamp)
        replay = await bot.driver.post(body, content_type=FORM, timestamp=timestamp)
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert first.status == 200
    assert "/agent @name" in first.text  # the help, answered without the database
    assert (replay.status, replay.text) == (200, "")


def test_the_process_memory_forgets_what_its_time_ran_out_on() -> None:
    now = [0.0]
    memory = LocalMemory(max_entries=10_000, clock=lambda: now[0])
    for index in range(300):  # a request a second, each remembered for 60 s
        now[0] = float(index)
        assert memory.first_time(f"request-{index}", ttl_seconds=60)
    assert len(memory) == 60  # the last minute's, not every one up to the bound
    assert not memory.first_time("request-299", ttl_seconds=60)  # still a replay
    assert memory.first_time("request-100", ttl_seconds=60)  # long gone: new again
