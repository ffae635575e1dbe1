"""The fake Slack Web API refuses what Slack refuses, so every Slack test also checks the
bot against it: blocks and views past Block Kit's limits (with the dev console's checks,
bot.devconsole.limits), an ephemeral message to a non-member, a message to a DM nobody
opened, a DM with the bot or someone deactivated, and calls past a method's rate."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.slack.fake_slack import BOT_USER_ID, FakeSlack


async def test_the_fake_refuses_what_block_kit_refuses(fake_slack: FakeSlack) -> None:
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token="xoxb-t", base_url=fake_slack.api_url, session=session)
        too_long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
        with pytest.raises(SlackApiError) as raised:
            await client.chat_postMessage(channel="C1", text="t", blocks=too_long)
        assert raised.value.response["error"] == "invalid_blocks"
        modal = {"type": "modal", "title": {"type": "plain_text", "text": "t" * 25}, "blocks": []}
        with pytest.raises(SlackApiError) as raised:
            await client.views_open(trigger_id="1.x", view=modal)
        assert raised.value.response["error"] == "invalid_arguments"
        fits = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3000}}]
        assert (await client.chat_postMessage(channel="C1", text="t", blocks=fits))["ok"]
        for options in (
            [_option("a", "d" * 76)],  # a description past 75 characters
            [_option(str(n), "d") for n in range(11)],  # 11 options in one checkboxes
        ):
            home = {"type": "home", "blocks": [_checkboxes(options)]}
            with pytest.raises(SlackApiError) as raised:
                await client.views_publish(user_id="U1", view=home)
            assert raised.value.response["error"] == "invalid_arguments"
        ten: dict[str, Any] = {
            "type": "home",
            "blocks": [_checkboxes([_option("a", "d" * 75)] * 10)],
        }
        assert (await client.views_publish(user_id="U1", view=ten))["ok"]


def _option(value: str, description: str) -> dict[str, Any]:
    return {
        "text": {"type": "plain_text", "text": value},
        "description": {"type": "plain_text", "text": description},
        "value": value,
    }


def _checkboxes(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": "pick",
        "optional": True,
        "label": {"type": "plain_text", "text": "Pick"},
        "element": {"type": "checkboxes", "action_id": "pick", "options": options},
    }


async def test_the_fake_refuses_what_slack_refuses_of_direct_and_ephemeral_messages(
    fake_slack: FakeSlack,
) -> None:
    fake_slack.channel_members["C1"] = ["U1"]
    fake_slack.disabled_users.add("U0GONE")
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token="xoxb-t", base_url=fake_slack.api_url, session=session)

        async def error_of(call: Awaitable[object]) -> str:
            with pytest.raises(SlackApiError) as raised:
                await call
            return str(raised.value.response["error"])

        assert await error_of(client.chat_postEphemeral(channel="C1", user="U2", text="t")) == (
            "user_not_in_channel"
        )
        assert (await client.chat_postEphemeral(channel="C1", user="U1", text="t"))["ok"]
        assert await error_of(client.chat_postMessage(channel="D0U1", text="t")) == (
            "channel_not_found"  # a DM nobody opened
        )
        assert await error_of(client.conversations_open(users="U0GONE")) == "user_disabled"
        assert await error_of(client.conversations_open(users=BOT_USER_ID)) == "cannot_dm_bot"
        opened = await client.conversations_open(users="U1")
        dm = opened["channel"]["id"]
        assert (await client.chat_postMessage(channel=dm, text="t"))["ok"]
        assert await error_of(client.chat_postEphemeral(channel=dm, user="U2", text="t")) == (
            "user_not_in_channel"
        )


async def test_the_fake_rate_limits_with_the_retry_after_of_the_window(
    fake_slack: FakeSlack,
) -> None:
    fake_slack.rate_limit("conversations.open", calls=2, per_seconds=30)
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token="xoxb-t", base_url=fake_slack.api_url, session=session)
        for user in ("U1", "U2"):
            assert (await client.conversations_open(users=user))["ok"]
        with pytest.raises(SlackApiError) as raised:
            await client.conversations_open(users="U3")
        assert raised.value.response.status_code == 429
        assert 29 <= int(raised.value.response.headers["Retry-After"]) <= 30
