"""/readyz says whether the bot can serve: the database answers with this build's schema
and Slack still accepts the bot's token (a revoked token is not ready, though the process
is alive); /metrics counts the Web API failures behind it."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.metrics import Metrics
from store.crypto import KeyRing
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import CHANNEL, REQUESTER, Bot, start_bot, stop_bot
from tests.slack.test_metrics import scrape, value


@pytest.fixture
async def probed(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, metrics=Metrics()
    )
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


async def get(bot: Bot, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(bot.base_url + path) as reply:
        return reply.status, await reply.json()


async def test_a_revoked_token_makes_the_bot_unready_until_slack_accepts_it_again(
    probed: Bot,
) -> None:
    bot = probed
    assert await get(bot, "/readyz") == (200, {"ready": True})
    assert await get(bot, "/healthz") == (200, {"ok": True})

    # the run's root message and its card: every post of the run is refused
    bot.fake.fail("chat.postMessage", error="token_revoked", times=2)
    await bot.driver.command("/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL)
    await bot.fake.wait_for("chat.postMessage", count=2)
    await bot.settle()

    status, answer = await get(bot, "/readyz")
    assert (status, answer) == (
        503,
        {"ready": False, "reason": "Slack chat.postMessage failed: token_revoked"},
    )
    assert await get(bot, "/healthz") == (200, {"ok": True})  # alive, not ready
    samples = await scrape(bot)
    revoked = {"method": "chat.postMessage", "error": "token_revoked"}
    assert value(samples, "slack_api_errors_total", **revoked) == 2

    await bot.driver.command("/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL)
    await bot.fake.wait_for("chat.postMessage", lambda call: call.ok)
    await bot.settle()
    assert await get(bot, "/readyz") == (200, {"ready": True})


async def test_an_error_about_the_call_itself_leaves_the_bot_ready(probed: Bot) -> None:
    bot = probed
    bot.fake.fail("chat.postMessage", error="channel_not_found")
    await bot.driver.command("/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL)
    await bot.fake.wait_for("chat.postMessage")
    await bot.settle()
    assert await get(bot, "/readyz") == (200, {"ready": True})
    samples = await scrape(bot)
    not_found = {"method": "chat.postMessage", "error": "channel_not_found"}
    assert value(samples, "slack_api_errors_total", **not_found) == 1


async def test_a_database_a_newer_build_migrated_is_not_ready(probed: Bot, tmp_path: Path) -> None:
    bot = probed
    status = await bot.store.schema_status()
    assert status.current
    with sqlite3.connect(tmp_path / "approvals.db") as newer:
        newer.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (status.latest + 1, f"{status.latest + 1:04d}_from_the_future", "2030-01-01"),
        )
    assert await get(bot, "/readyz") == (
        503,
        {
            "ready": False,
            "reason": f"database schema is at version {status.latest + 1}; "
            f"this build expects {status.latest}",
        },
    )
