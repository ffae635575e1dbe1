"""Slack's side of the protocol: signatures, retries, rate limits, expired triggers,
commands, App Home, health."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from bot.errors import SlackError
from bot.slack.signature import compute_signature
from tests.slack.fake_slack import RESPONSE_URL
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    in_thread,
    start_chat,
    start_run,
    thread_message,
)


async def test_bad_signatures_get_401_and_change_nothing(bot: Bot) -> None:
    body = "command=%2Fagent&text=deploy&user_id=U1&channel_id=C1&trigger_id=t"
    now = str(int(time.time()))
    forged = compute_signature(signing_secret="not-the-secret", timestamp=now, body=body.encode())
    stale = str(int(time.time()) - 600)
    cases: list[dict[str, Any]] = [
        {"timestamp": now, "signature": forged},
        {"sign": False},
        {
            "timestamp": stale,
            "signature": compute_signature(
                signing_secret="8f742231b10e8888abcd99yyyzzz85a5",
                timestamp=stale,
                body=body.encode(),
            ),
        },
        {"timestamp": "17e8", "signature": "v0=" + "0" * 64},
        {"timestamp": "not-a-number", "signature": forged},
    ]
    for case in cases:
        reply = await bot.driver.post(
            body, content_type="application/x-www-form-urlencoded", **case
        )
        assert reply.status == 401, case
    await bot.settle()
    assert [call.method for call in bot.fake.calls] == ["auth.test"]  # at start-up only
    assert await bot.service.store.list_runs() == []


async def test_a_slack_retry_is_processed_once(bot: Bot) -> None:
    root = await start_chat(bot)
    await bot.settle()
    event = thread_message(root, "and then?", user=REQUESTER, ts="1800000000.000900")
    first = await bot.driver.event(event, event_id="Ev0RETRY1")
    again = await bot.driver.event(event, event_id="Ev0RETRY1", retry_num=1)
    assert (first.status, again.status) == (200, 200)
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Second answer."))
    await bot.settle()
    assert (
        len([c for c in bot.fake.calls_to("chat.postMessage") if "Second answer." in c.text]) == 1
    )


async def test_slack_429_is_retried_after_retry_after(bot: Bot) -> None:
    bot.fake.fail("chat.postMessage", times=1, status=429, retry_after=0)
    root, (card,) = await start_run(bot)
    statuses = [call.ok for call in bot.fake.calls_to("chat.postMessage")]
    assert statuses[:2] == [False, True]
    assert root.ok
    assert card.ok


async def test_an_expired_trigger_id_is_explained(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    bot.fake.fail("views.open", error="expired_trigger_id")
    reply = await bot.driver.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    assert reply.status == 200
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert told.args["user"] == APPROVER
    assert "Press the button again" in told.text


async def test_help_and_list_commands(bot: Bot) -> None:
    help_reply = await bot.driver.command("/agent", "help", user=REQUESTER, channel=CHANNEL)
    assert help_reply.status == 200
    assert "/agent @name" in help_reply.text
    await start_run(bot)
    await bot.settle()
    listed = await bot.driver.command("/approvals", "list", user=APPROVER, channel=CHANNEL)
    assert listed.status == 200
    (told,) = await bot.fake.wait_for(RESPONSE_URL)
    assert told.args["response_type"] == "ephemeral"
    assert "deploy_release" in told.text
    assert f"<@{REQUESTER}>" in told.text
    mine = await bot.driver.command("/approvals", "list", user=REQUESTER, channel=CHANNEL)
    assert mine.status == 200
    told_requester = await bot.fake.wait_for(RESPONSE_URL, count=2)
    assert "Nothing waits" in told_requester[1].text


async def test_app_home_lists_what_waits_for_the_viewer(bot: Bot) -> None:
    await start_run(bot)
    await bot.settle()
    reply = await bot.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    assert reply.status == 200
    (published,) = await bot.fake.wait_for("views.publish")
    assert published.args["user_id"] == APPROVER
    assert "deploy_release" in json.dumps(published.args["view"])


async def test_healthz(bot: Bot) -> None:
    url = bot.driver.url.replace("/slack/events", "/healthz")
    async with bot.driver._session.get(url) as resp:
        assert resp.status == 200


async def test_an_unknown_agent_is_explained_to_the_requester_only(bot: Bot) -> None:
    reply = await bot.driver.command("/agent", "@nosuch do it", user=REQUESTER, channel=CHANNEL)
    assert reply.status == 200
    (told,) = await bot.fake.wait_for(RESPONSE_URL)
    assert told.args["response_type"] == "ephemeral"
    assert "nosuch" in told.text
    await bot.settle()
    assert bot.fake.calls_to("chat.postMessage") == []
    assert await bot.service.store.list_runs() == []


async def test_the_url_verification_challenge_is_answered(bot: Bot) -> None:
    """Slack checks the Request URL when the app is created from the manifest."""
    body = json.dumps(
        {
            "token": "x",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
            "type": "url_verification",
        }
    )
    reply = await bot.driver.post(body, content_type="application/json")
    assert reply.status == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in reply.text


async def test_a_channel_the_bot_is_not_in_is_explained(bot: Bot) -> None:
    bot.fake.fail("chat.postMessage", times=2, error="not_in_channel")  # root and card
    reply = await bot.driver.command(
        "/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL
    )
    assert reply.status == 200
    (told,) = await bot.fake.wait_for(RESPONSE_URL)
    assert "/invite @approvals" in told.text
    assert f"<#{CHANNEL}>" in told.text


async def test_a_response_url_on_a_foreign_host_is_refused(bot: Bot) -> None:
    with pytest.raises(SlackError, match=r"refusing to post to response_url host 'evil\.example'"):
        await bot.surface.slack.respond(response_url="https://evil.example/hook", text="hi")
    assert bot.fake.calls_to(RESPONSE_URL) == []


async def test_an_unexpected_failure_is_logged_and_the_person_told(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    bot.service.pending_for = broken  # type: ignore[method-assign,assignment]
    reply = await bot.driver.command("/approvals", "list", user=APPROVER, channel=CHANNEL)
    assert reply.status == 200
    (told,) = await bot.fake.wait_for(RESPONSE_URL)
    assert "Something went wrong on our side" in told.text
    assert "a bug" not in told.text
    await bot.settle()
    assert "Slack task slack:approvals:ApprovalsList failed" in caplog.text
