"""Nothing credential-shaped leaves through Slack: every sentence the bot builds is
redacted before it is clipped, and the gateway redacts whatever it sends (text, blocks,
views) as the last line of defence."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from bot.credentials import REDACTED
from bot.errors import InputError
from bot.slack.blocks import SECTION_TEXT_LIMIT
from bot.slack.gateway import SlackGateway
from bot.slack.messages import approval_lines, replies, run_thread
from store.records import AuditEvent
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import BOT_TOKEN

PASSWORD = "Sup3rLeak9"
TOKEN = "xoxb-" + "2718281828-3141592653-AbCdEfGhIjKlMnOp"
TASK = f"set payments db_password={PASSWORD}"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_the_run_root_message_redacts_the_task() -> None:
    text = run_thread.run_root_text(agent_name="ops", requester="U0REQ", task=TASK)
    assert PASSWORD not in text
    assert f"db_password={REDACTED}" in text


def test_redaction_comes_before_clipping() -> None:
    """A short secret grows into the longer marker: were it redacted after the text was
    clipped to Slack's limit, the message would pass the limit and Slack refuse it."""
    room = SECTION_TEXT_LIMIT - len(
        run_thread.run_root_text(agent_name="ops", requester="U0REQ", task="")
    )
    task = "x" * (room - 13) + " password=abc"
    text = run_thread.run_root_text(agent_name="ops", requester="U0REQ", task=task)
    assert len(text) <= SECTION_TEXT_LIMIT
    assert "password=abc" not in text


@pytest.mark.parametrize(
    "text",
    [
        run_thread.final_answer_text(
            final_output=f"Rotated. New token {TOKEN}", status="completed"
        ),
        run_thread.run_failed_text(f"ModelError: upstream refused Bearer {TOKEN}"),
        replies.warning(InputError(f"cannot parse password={PASSWORD}")),
        replies.refused_text(InputError(f"cannot parse password={PASSWORD}")),
        approval_lines.audit_text(
            "ap1",
            [
                AuditEvent(
                    seq=1,
                    kind="failed",
                    actor="U0REQ",
                    run_id="r1",
                    approval_id="ap1",
                    detail={"error": f"db_password={PASSWORD}"},
                    at=NOW,
                    prev_hash="0" * 64,
                    hash="1" * 64,
                )
            ],
        ),
    ],
)
def test_thread_messages_and_private_answers_are_redacted(text: str) -> None:
    assert PASSWORD not in text
    assert TOKEN not in text
    assert REDACTED in text


async def test_the_gateway_redacts_everything_it_sends(fake_slack: FakeSlack) -> None:
    section = {
        "type": "section",
        "block_id": "call",
        "text": {"type": "mrkdwn", "text": f"token {TOKEN}"},
    }
    buttons: dict[str, Any] = {
        "type": "actions",
        "block_id": "decision",
        "elements": [
            {
                "type": "button",
                "action_id": "approval_approve",
                "value": "ap1",
                "text": {"type": "plain_text", "text": f"password={PASSWORD}"},
            }
        ],
    }
    modal = {
        "type": "modal",
        "callback_id": "approval_decision",
        "private_metadata": "approve|ap1|C1",
        "title": {"type": "plain_text", "text": "Approve tool call"},
        "blocks": [section],
    }
    fake_slack.channel_members["C1"] = ["U1"]
    async with aiohttp.ClientSession() as session:
        slack = SlackGateway.open(token=BOT_TOKEN, api_url=fake_slack.api_url, session=session)
        await slack.post(channel="C1", text=f"db_password={PASSWORD}", blocks=[section, buttons])
        await slack.update(channel="C1", ts="1.0", text=TOKEN, blocks=[section])
        await slack.tell(channel="C1", user="U1", text=f"your token {TOKEN}")
        await slack.respond(response_url=fake_slack.response_url, text=f"password={PASSWORD}")
        await slack.open_view(trigger_id="t1", view=modal)
        await slack.publish_home(user="U1", view={"type": "home", "blocks": [section]})
    sent = json.dumps([dict(call.args) for call in fake_slack.calls])
    assert len(fake_slack.calls) == 6
    assert PASSWORD not in sent
    assert TOKEN not in sent
    (post,) = fake_slack.calls_to("chat.postMessage")
    assert post.args["blocks"][1] == {
        **buttons,
        "elements": [
            {
                **buttons["elements"][0],
                "text": {"type": "plain_text", "text": f"password={REDACTED}"},
            }
        ],
    }
    (opened,) = fake_slack.calls_to("views.open")
    assert opened.args["view"]["private_metadata"] == "approve|ap1|C1"
    assert opened.args["view"]["callback_id"] == "approval_decision"
