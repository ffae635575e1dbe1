"""A person's bad input is their error, not the bot's: answered where they typed it and
logged as what it is (one line, no traceback, none of the values they typed)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.slack.governance_harness import clock, governed
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    open_modal,
    start_run,
)

__all__ = ["clock", "governed"]

TYPED_VALUE = 4242424242  # what the approver typed; it must not reach the log


async def test_invalid_edit_is_answered_inline_and_logged_once_as_a_user_error(
    governed: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    _, (card,) = await start_run(governed)
    view = await open_modal(governed, card, "Approve with changes", user=APPROVER)
    edit = json.dumps({"service": "payments", "version": TYPED_VALUE})
    with caplog.at_level(logging.DEBUG):
        reply = await governed.driver.submit(view, user=APPROVER, reason="r", message=edit)
        await governed.settle()

    assert reply.json()["response_action"] == "errors"
    assert "version" in reply.json()["errors"]["arguments"]
    assert str(TYPED_VALUE) in reply.json()["errors"]["arguments"]  # the person sees it
    mine = [r for r in caplog.records if r.name.startswith("bot.")]
    assert [r for r in mine if r.levelno >= logging.ERROR or r.exc_info] == []
    (line,) = [r for r in mine if "approve with changes" in r.getMessage()]
    assert line.levelno in (logging.INFO, logging.WARNING)
    assert APPROVER in line.getMessage()
    assert "\n" not in line.getMessage()
    assert all(str(TYPED_VALUE) not in caplog.handler.format(r) for r in caplog.records)
    record = await governed.service.store.get_approval(view["private_metadata"].split("|")[1])
    assert record is not None
    assert (record.status, record.amended_by) == ("pending", None)


async def test_a_long_agent_command_is_refused_by_its_length_before_it_is_parsed(
    bot: Bot,
) -> None:
    name = "x" * 5000  # not an agent name either: the length is what is said
    text = f"@{name} deploy payments 1.2.3"
    reply = await bot.driver.command("/agent", text, user=REQUESTER, channel=CHANNEL)
    assert reply.text == (
        f":warning: the task is {len(text)} characters long; the limit is 4000 (limits.task_chars)"
    )


async def test_a_bad_agent_name_is_quoted_short(bot: Bot) -> None:
    reply = await bot.driver.command("/agent", f"@{'y!' * 600} go", user=REQUESTER, channel=CHANNEL)
    first = reply.text.splitlines()[0]
    assert first.startswith(":warning: 'y!y!")
    assert "is not an agent name" in first
    assert len(first) < 200
