"""SlackGroupDirectory: usergroups.users.list through the real client, cached for a TTL
on an injected clock, failing closed (empty, logged, not cached) when Slack cannot tell."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.slack.gateway import build_web_client
from bot.slack.groups import SlackGroupDirectory
from tests.slack.fake_slack import FakeSlack


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


def directory(fake: FakeSlack, session: aiohttp.ClientSession, clock: Clock) -> SlackGroupDirectory:
    client = build_web_client(token="xoxb-test", api_url=fake.api_url, session=session)
    return SlackGroupDirectory(client, ttl_seconds=60.0, clock=clock)


async def test_members_are_cached_for_the_ttl_then_asked_again(
    fake_slack: FakeSlack, session: aiohttp.ClientSession
) -> None:
    clock = Clock()
    groups = directory(fake_slack, session, clock)
    fake_slack.usergroups["S0RELEASE"] = ["U0A", "U0B"]
    assert await groups.members("S0RELEASE") == frozenset({"U0A", "U0B"})
    fake_slack.usergroups["S0RELEASE"] = ["U0A"]
    clock.now += 59.0
    assert await groups.members("S0RELEASE") == frozenset({"U0A", "U0B"})
    assert len(fake_slack.calls_to("usergroups.users.list")) == 1
    clock.now += 1.0
    assert await groups.members("S0RELEASE") == frozenset({"U0A"})
    calls = fake_slack.calls_to("usergroups.users.list")
    assert [call.args["usergroup"] for call in calls] == ["S0RELEASE", "S0RELEASE"]


@pytest.mark.parametrize("error", ["no_such_subteam", "missing_scope", "ratelimited"])
async def test_a_slack_error_counts_as_no_members_is_logged_and_not_cached(
    fake_slack: FakeSlack,
    session: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    error: str,
) -> None:
    groups = directory(fake_slack, session, Clock())
    fake_slack.usergroups["S0RELEASE"] = ["U0A"]
    fake_slack.fail("usergroups.users.list", error=error)
    with caplog.at_level(logging.WARNING, logger="bot.slack.groups"):
        assert await groups.members("S0RELEASE") == frozenset()
    assert f"S0RELEASE failed ({error})" in caplog.text
    assert await groups.members("S0RELEASE") == frozenset({"U0A"})  # asked again


async def test_an_unreachable_slack_counts_as_no_members(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeSlack()
    await fake.start()
    await fake.close()  # nothing listens there any more
    groups = directory(fake, session, Clock())
    with caplog.at_level(logging.WARNING, logger="bot.slack.groups"):
        assert await groups.members("S0RELEASE") == frozenset()
    assert "unreachable" in caplog.text
