"""What anyone who reaches the bot's port learns without a signature.

`/healthz`, `/readyz` and `/metrics` answer unsigned GETs on the port Slack posts to.
After a call carrying a secret was asked for, approved and run, and a Web API call
failed, they tell counts, states and Slack's error codes: never a person, a channel, an
argument, a digest, an id of a run or an approval, or a token. A tool is named only as
the configuration names it, as the `tool` label of the time to decision.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.metrics import Metrics
from store.crypto import KeyRing
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    BOT_TOKEN,
    CHANNEL,
    REQUESTER,
    SECRET_VALUE,
    SIGNING_SECRET,
    Bot,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

OPEN_PATHS = ("/healthz", "/readyz", "/metrics")


@pytest.fixture
async def served(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, metrics=Metrics()
    )
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


async def read_unsigned(bot: Bot) -> dict[str, tuple[int, str]]:
    answers = {}
    async with aiohttp.ClientSession() as session:
        for path in OPEN_PATHS:
            async with session.get(bot.base_url + path) as reply:
                answers[path] = (reply.status, await reply.text())
    return answers


async def test_the_open_endpoints_name_no_person_call_or_secret(served: Bot) -> None:
    bot = served
    _, (card,) = await start_run(bot, f"@secrets set payments slack_token={SECRET_VALUE}")
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    reply = await bot.driver.submit(view, user=APPROVER, reason="rotation CR-7")
    assert (reply.status, reply.text) == (200, "")
    await bot.settle()
    assert bot.effects.configs == [("slack_token", SECRET_VALUE)]  # the call ran
    # then Slack refuses the token: the next run's root message and card are not posted
    bot.fake.fail("chat.postMessage", error="token_revoked", times=2)
    await bot.driver.command("/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL)
    await bot.fake.wait_for("chat.postMessage", lambda call: not call.ok, count=2)
    await bot.settle()

    (approval,) = await bot.store.recent_decisions(limit=1)
    assert approval.tool_name == "set_config"
    answers = await read_unsigned(bot)

    assert answers["/healthz"][0] == 200
    assert answers["/readyz"][0] == 503  # the refused token shows, as an error code
    assert "token_revoked" in answers["/readyz"][1]
    assert answers["/metrics"][0] == 200
    assert "approval_decisions_total" in answers["/metrics"][1]
    told = "\n".join(text for _, text in answers.values())
    for private in (
        SECRET_VALUE,
        BOT_TOKEN,
        SIGNING_SECRET,
        REQUESTER,
        APPROVER,
        CHANNEL,
        "slack_token",
        "payments",
        "CR-7",
        approval.approval_id,
        approval.run_id,
        approval.arguments_digest,
        approval.execution_key,
    ):
        assert private not in told, private
    # A tool's name, as the configuration spells it, labels the time to decision only.
    naming = [line for line in told.splitlines() if "set_config" in line]
    assert naming
    for line in naming:
        assert line.startswith("approvals_time_to_decision_seconds_"), line
        assert 'tool="set_config"' in line, line
