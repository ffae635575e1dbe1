"""One JSON log line per business event, with the ids that find it in the audit log and
never the call's arguments or the reason a person gave (LOG_FORMAT=json)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from bot.logs import LogSettings, configure_logging
from tests.slack.slack_harness import APPROVER, Bot, open_modal, start_run

REASON = "ticket CHG-7731 signed off by Dana"
ARGUMENT_VALUE = "1.2.3"  # the ops agent's deploy_release(version="1.2.3")


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    stream = io.StringIO()
    configure_logging(LogSettings(format="json", level="INFO"), stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:], root.level = before
        logging.captureWarnings(False)  # what json turned on for the process
        sys.excepthook = sys.__excepthook__


def parsed(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_each_business_event_is_one_line_with_its_ids(
    bot: Bot, json_lines: io.StringIO
) -> None:
    _, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason=REASON)
    await bot.settle()

    lines = parsed(json_lines)
    events = [line for line in lines if "event" in line]
    assert [line["event"] for line in events] == [
        "run_started",
        "run_paused",
        "approval_requested",
        "approval_decided",
        "resume_attempted",
        "execution_claimed",
        "execution_succeeded",
        "run_completed",
    ]
    (run_id,) = {line["run_id"] for line in events}
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    for line in events:
        assert line["logger"] == "approvals.events"
        assert line["level"] == "INFO"
        assert line["time"].endswith("+00:00")
    by_event = {line["event"]: line for line in events}
    decided = by_event["approval_decided"]
    assert (decided["approval_id"], decided["outcome"]) == (approval_id, "approved")
    executed = by_event["execution_succeeded"]
    assert executed["approval_id"] == approval_id
    assert executed["tool_call_id"] == decided["tool_call_id"]
    assert executed["execution_key"] == bot.effects.deploys[0][2]
    assert executed["run_id"] == run_id

    everything = json_lines.getvalue()
    assert REASON not in everything
    assert ARGUMENT_VALUE not in everything
