"""`keys rotate` next to a running `serve` on its SQLite file: refused (the server lock
`db copy` takes) unless the operator says the new key is in every process's ring; when
they say so wrongly, the server meets a key its ring lacks (the call's sealed snapshot),
and that is an operational error, not tampering: the decision is refused naming the key,
nothing is recorded or failed, /readyz names the key, and the server restarted with the
key takes the decision and finishes the run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import SERVE_CHANNEL, Served, serve_env, serving
from tests.slack.slack_harness import card_calls
from tests.slack.test_serve_lock import approvals_bot

pytestmark = pytest.mark.slow


def rows(database: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(database) as connection:
        return connection.execute(sql).fetchall()


async def readyz(served: Served) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(served.url.removesuffix("/slack/events") + "/readyz") as reply,
    ):
        return reply.status, await reply.json()


async def test_rotation_beside_a_server_is_refused_and_a_key_it_lacks_makes_the_run_wait(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path)
    database = tmp_path / "approvals.db"
    async with serving(env) as served, aiohttp.ClientSession() as session:
        driver = served.driver(session, fake_slack)
        await driver.command("/agent", "deploy payments 1.2.3", user="U0REQ", channel=SERVE_CHANNEL)
        (card,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: c in card_calls(fake_slack)
        )
        [(old_key,)] = rows(database, "SELECT key_id FROM run_blobs")

        code, out, lines = await approvals_bot(env, "keys", "generate", "--id", "k-new")
        assert code == 0, lines
        code, out, lines = await approvals_bot(env, "keys", "rotate")
        assert (code, out) == (2, ""), lines
        assert len(lines) == 1, lines
        assert f"cannot rotate the keys of {database} while an approvals-bot server" in lines[0]
        assert f"pid {served.process.pid}" in lines[0]
        assert "--in-every-ring" in lines[0]
        assert rows(database, "SELECT key_id FROM run_blobs") == [(old_key,)]  # untouched

        # The operator says the server has the key; it does not (it read its ring at start).
        code, out, lines = await approvals_bot(env, "keys", "rotate", "--in-every-ring")
        assert code == 0, lines
        assert "re-encrypted with key k-new: 1 run state(s)" in out
        assert await readyz(served) == (200, {"ready": True})

        await driver.click(card, "Approve", user="U0APP", ts=card.answer["ts"])
        (opened,) = await fake_slack.wait_for("views.open")
        reply = await driver.submit(opened.args["view"], user="U0APP", reason="release 42")
        assert reply.status == 200
        assert "k-new" in reply.text  # the person is told why it cannot be decided here yet
        status, answer = await readyz(served)
        assert status == 503
        assert "lacks key id(s) k-new" in answer["reason"]
        assert rows(database, "SELECT status FROM approvals") == [("pending",)]  # waits

    kinds = {kind for (kind,) in rows(database, "SELECT kind FROM audit_events")}
    assert "tamper_detected" not in kinds
    assert "failed" not in kinds
    assert not (tmp_path / "effects.jsonl").exists()  # nothing ran

    async with serving(env) as served, aiohttp.ClientSession() as session:
        driver = served.driver(session, fake_slack)  # restarted: its ring has k-new
        assert await readyz(served) == (200, {"ready": True})
        modals = len(fake_slack.calls_to("views.open"))
        await driver.click(card, "Approve", user="U0APP", ts=card.answer["ts"])
        opened = (await fake_slack.wait_for("views.open", count=modals + 1))[-1]
        reply = await driver.submit(opened.args["view"], user="U0APP", reason="release 42")
        assert (reply.status, reply.text) == (200, "")
        await fake_slack.wait_for(
            "chat.postMessage",
            lambda c: (
                c.args.get("thread_ts") == card.args["thread_ts"]
                and "deployed payments 1.2.3" in c.text
            ),
        )
    assert rows(database, "SELECT status FROM runs") == [("completed",)]
    effects = [json.loads(line) for line in (tmp_path / "effects.jsonl").read_text().splitlines()]
    assert [line["tool"] for line in effects] == ["deploy_release"]
