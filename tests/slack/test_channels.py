"""SlackChannelDirectory: conversations.members through the real client, every page of
it, cached for a TTL on an injected clock, failing closed (not a member, logged, not
cached) when Slack cannot tell."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.slack.channels import SlackChannelDirectory
from bot.slack.gateway import build_web_client
from tests.slack.fake_slack import FakeSlack

MEMBERS = ["U0A", "U0B", "U0C", "U0D", "U0E"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


def directory(
    fake: FakeSlack, session: aiohttp.ClientSession, clock: Clock
) -> SlackChannelDirectory:
    client = build_web_client(token="xoxb-test", api_url=fake.api_url, session=session)
    return SlackChannelDirectory(client, ttl_seconds=60.0, clock=clock, page_size=2)


async def test_every_page_is_read_and_cached_for_the_ttl(
    fake_slack: FakeSlack, session: aiohttp.ClientSession
) -> None:
    clock = Clock()
    channels = directory(fake_slack, session, clock)
    fake_slack.channel_members["C0PRIV"] = list(MEMBERS)
    assert await channels.is_member("C0PRIV", "U0E")  # on the third page
    assert not await channels.is_member("C0PRIV", "U0OUTSIDE")
    calls = fake_slack.calls_to("conversations.members")
    assert [(c.args["channel"], c.args.get("cursor")) for c in calls] == [
        ("C0PRIV", None),
        ("C0PRIV", "2"),
        ("C0PRIV", "4"),
    ]
    assert {c.args["limit"] for c in calls} == {"2"}
    fake_slack.channel_members["C0PRIV"] = ["U0A"]  # U0E left
    clock.now += 59.0
    assert await channels.is_member("C0PRIV", "U0E")
    assert len(fake_slack.calls_to("conversations.members")) == 3
    clock.now += 1.0
    assert not await channels.is_member("C0PRIV", "U0E")
    assert len(fake_slack.calls_to("conversations.members")) == 4


async def test_concurrent_checks_of_one_channel_share_one_read(
    fake_slack: FakeSlack, session: aiohttp.ClientSession
) -> None:
    channels = directory(fake_slack, session, Clock())
    fake_slack.channel_members["C0PRIV"] = ["U0A"]
    answers = await asyncio.gather(*(channels.is_member("C0PRIV", "U0A") for _ in range(5)))
    assert answers == [True] * 5
    assert len(fake_slack.calls_to("conversations.members")) == 1


@pytest.mark.parametrize("error", ["channel_not_found", "missing_scope", "ratelimited"])
async def test_a_slack_error_means_not_a_member_is_logged_and_not_cached(
    fake_slack: FakeSlack,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    error: str,
) -> None:
    channels = directory(fake_slack, session, Clock())
    fake_slack.channel_members["C0PRIV"] = ["U0A"]
    fake_slack.fail("conversations.members", error=error)
    with caplog.at_level(logging.WARNING, logger="bot.slack.channels"):
        assert not await channels.is_member("C0PRIV", "U0A")
    assert f"C0PRIV failed ({error})" in caplog.text
    assert await channels.is_member("C0PRIV", "U0A")  # asked again


async def test_a_failure_on_a_later_page_counts_nobody_and_caches_nothing(
    fake_slack: FakeSlack, session: aiohttp.ClientSession
) -> None:
    channels = directory(fake_slack, session, Clock())
    fake_slack.channel_members["C0PRIV"] = list(MEMBERS)
    fake_slack.fail("conversations.members", error="fetch_members_failed", after=1)
    assert not await channels.is_member("C0PRIV", "U0A")  # U0A was on the first page
    assert len(fake_slack.calls_to("conversations.members")) == 2
    assert await channels.is_member("C0PRIV", "U0A")
    assert len(fake_slack.calls_to("conversations.members")) == 5


async def test_an_unreachable_slack_means_not_a_member(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeSlack()
    await fake.start()
    await fake.close()  # nothing listens there any more
    channels = directory(fake, session, Clock())
    with caplog.at_level(logging.WARNING, logger="bot.slack.channels"):
        assert not await channels.is_member("C0PRIV", "U0A")
    assert "unreachable" in caplog.text
