"""The real server killed (SIGKILL) right after it answered a decision's modal: Slack
closed the modal on that answer, so the decision must already be in the database; the
restarted server shows it on the card and resumes the run (whatever of the follow-ups
the killed process managed, the call runs once)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import aiohttp
import pytest

from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, serving
from tests.slack.slack_harness import card_calls

pytestmark = pytest.mark.slow

BUSY_SECONDS = 0.3


async def test_a_decision_answered_before_a_kill_survives_it(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path)
    database = tmp_path / "approvals.db"
    async with serving(env) as served, aiohttp.ClientSession() as session:
        driver = served.driver(session, fake_slack)
        await driver.command("/agent", "deploy payments 1.2.3", user="U0REQ", channel="C0OPS")
        (card,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: c in card_calls(fake_slack)
        )
        await driver.click(card, "Approve", user="U0APP", ts=card.answer["ts"])
        (opened,) = await fake_slack.wait_for("views.open")
        # Another connection keeps the database busy for a moment while the person
        # submits: an answer sent before the commit would come while the vote still waits.
        other = sqlite3.connect(database, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            submit = asyncio.create_task(
                driver.submit(opened.args["view"], user="U0APP", reason="release train 42")
            )
            await asyncio.wait({submit}, timeout=BUSY_SECONDS)
            answered_while_busy = submit.done()
            if answered_while_busy:
                await served.kill()  # at once, as in the crash that lost decisions
            other.execute("ROLLBACK")
        finally:
            other.close()
        reply = await submit
        if not answered_while_busy:
            await served.kill()
        assert (reply.status, reply.text) == (200, "")

    with sqlite3.connect(database) as check:
        recorded = check.execute("SELECT status, decider, reason FROM approvals").fetchall()
    assert recorded == [("approved", "U0APP", "release train 42")]

    async with serving(env):  # the restart: recovery finishes what the kill left
        (update, *_) = await fake_slack.wait_for(
            "chat.update", lambda c: c.args.get("ts") == card.answer["ts"]
        )
        assert "<@U0APP>" in update.text
        (answer,) = await fake_slack.wait_for(
            "chat.postMessage",
            lambda c: c.args.get("thread_ts") == card.args["thread_ts"] and c is not card,
        )
        assert "deployed payments 1.2.3" in answer.text
    lines = [json.loads(line) for line in (tmp_path / "effects.jsonl").read_text().splitlines()]
    assert [line["tool"] for line in lines] == ["deploy_release"]
