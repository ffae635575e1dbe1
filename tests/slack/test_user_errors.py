"""A person's bad input is their error, not the bot's: answered where they typed it and
logged as what it is (one line, no traceback, none of the values they typed)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.slack.governance_harness import clock, governed
from tests.slack.slack_harness import APPROVER, Bot, open_modal, start_run

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
