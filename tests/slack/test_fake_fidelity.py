"""The fake Slack Web API refuses blocks and views past Block Kit's limits as Slack does
(with the dev console's checks, bot.devconsole.limits), so every Slack test also checks
the bot's builders against those limits."""

from __future__ import annotations

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.slack.fake_slack import FakeSlack


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
