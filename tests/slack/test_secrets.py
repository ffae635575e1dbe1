"""End to end: a secret in the task, a tool's arguments, its result, the final answer and
an error reaches neither Slack (every recorded Web API request), nor the log, nor the
audit trail."""

from __future__ import annotations

import json
import logging

import pytest

from bot.credentials import REDACTED
from tests.slack.fake_slack import RESPONSE_URL
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    ERROR_TOKEN,
    FINAL_PASSWORD,
    REQUESTER,
    TOOL_ARGUMENT_SECRET,
    TOOL_RESULT_SECRET,
    Bot,
    in_thread,
    open_modal,
    start_run,
)

TASK_PASSWORD = "Sup3rLeak9"
SECRETS = (TASK_PASSWORD, TOOL_ARGUMENT_SECRET, TOOL_RESULT_SECRET, FINAL_PASSWORD, ERROR_TOKEN)


async def test_no_secret_reaches_slack_or_the_log(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    root, (card,) = await start_run(bot, f"@leaky rotate payments db_password={TASK_PASSWORD}")
    assert f"db_password={REDACTED}" in root.text
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason="rotation CR-7")
    (answer,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "Done: rotated"))
    assert f"admin password={REDACTED}" in answer.text

    for agent in ("broken", "crashing"):  # our error, told in the thread; a bug, logged
        reply = await bot.driver.command(
            "/agent", f"@{agent} check api_key={TASK_PASSWORD}", user=REQUESTER, channel=CHANNEL
        )
        assert reply.status == 200
    stopped = await bot.fake.wait_for(
        "chat.postMessage", lambda c: "The run stopped" in c.text, count=2
    )
    assert any(f"Authorization: {REDACTED}" in call.text for call in stopped)
    assert "RuntimeError: upstream answered 401" in caplog.text

    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    for text in (f"show {approval_id}", f"audit {approval_id}", "list"):
        await bot.driver.command("/approvals", text, user=APPROVER, channel=CHANNEL)
    await bot.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    await bot.fake.wait_for(RESPONSE_URL, count=3)
    await bot.fake.wait_for("views.publish")
    await bot.settle()

    sent = json.dumps([dict(call.args) for call in bot.fake.calls], ensure_ascii=False)
    logged = caplog.text
    audited = json.dumps([dict(event.detail) for event in await bot.store.audit_events()])
    for secret in SECRETS:
        assert secret not in sent, secret
        assert secret not in logged, secret
        assert secret not in audited, secret  # `audit export` shows the failures' errors
    assert "redacted a credential" not in logged  # the builders redacted it all themselves
