"""End to end: a call of a private channel is shown to and decided by its members only
(admins aside), in `/approvals`, App Home, the modal and the decision itself; when Slack
cannot say who is a member, nobody is (fail closed)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.policy.loading import parse_policy
from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    in_thread,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

STRANGER = "U0STRANGER"  # eligible by the policy (anyone but the requester), not a member
ADMIN = "U0ADMIN01"
NOT_A_MEMBER = "not a member of the channel"


@pytest.fixture
async def private(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    fake_slack.channel_members[CHANNEL] = [REQUESTER, APPROVER]
    policy = parse_policy(f'admins = ["{ADMIN}"]', source="test-policy.toml")
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, policy=policy
    )
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


def approval_id_of(card: Any) -> str:
    value: str = card.args["blocks"][-1]["elements"][0]["value"]
    return value


async def answer(bot: Bot, text: str, *, user: str) -> str:
    before = len(bot.fake.calls_to(RESPONSE_URL))
    await bot.driver.command("/approvals", text, user=user, channel="C0ELSEWHERE")
    calls = await bot.fake.wait_for(RESPONSE_URL, count=before + 1)
    return str(calls[-1].args["text"])


async def home(bot: Bot, user: str) -> str:
    before = len(bot.fake.calls_to("views.publish"))
    await bot.driver.event({"type": "app_home_opened", "user": user, "tab": "home"})
    calls = await bot.fake.wait_for("views.publish", count=before + 1)
    return json.dumps(calls[-1].args["view"])


def told(user: str, needle: str) -> Any:
    return lambda c: c.args.get("user") == user and needle in c.text


async def test_a_stranger_to_the_channel_neither_sees_nor_decides_its_calls(
    private: Bot,
) -> None:
    bot = private
    root, (card,) = await start_run(bot)
    approval_id = approval_id_of(card)

    assert "Nothing waits for your decision" in await answer(bot, "list", user=STRANGER)
    assert approval_id in await answer(bot, "list", user=APPROVER)
    assert NOT_A_MEMBER in await answer(bot, f"show {approval_id}", user=STRANGER)
    assert NOT_A_MEMBER in await answer(bot, f"audit {approval_id}", user=STRANGER)
    assert approval_id not in await home(bot, STRANGER)
    assert approval_id in await home(bot, APPROVER)

    # Slack shows no ephemeral message to someone outside the channel: a notice says why.
    await bot.driver.click(card, "Approve", user=STRANGER, ts=card.answer["ts"])
    (notice,) = await bot.fake.wait_for("views.open", lambda c: NOT_A_MEMBER in json.dumps(c.args))
    assert notice.args["view"]["type"] == "modal"
    assert "submit" not in notice.args["view"]  # nothing to decide in it
    await bot.settle()
    assert [c.answer["error"] for c in bot.fake.calls_to("chat.postEphemeral")] == [
        "user_not_in_channel"
    ]

    view = await open_modal(bot, card, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=STRANGER, reason="I say so")  # a form not theirs
    await bot.settle()
    record = await bot.store.get_approval(approval_id)
    assert record is not None
    assert record.status == "pending"
    refused = [e for e in await bot.store.audit_events() if e.kind == "refused"]
    assert [(e.actor, e.detail["why"]) for e in refused] == [(STRANGER, "not_a_channel_member")]

    await bot.driver.submit(view, user=APPROVER, reason="member, approver")
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert approval_id not in await home(bot, STRANGER)  # not among its recent decisions
    assert approval_id in await home(bot, APPROVER)


async def test_an_admin_decides_without_being_a_member(private: Bot) -> None:
    _, (card,) = await start_run(private)
    view = await open_modal(private, card, "Approve", user=ADMIN)
    await private.driver.submit(view, user=ADMIN, reason="admin on call")
    await private.fake.wait_for("chat.update", lambda c: "Approved" in c.text)
    await private.settle()
    assert len(private.effects.deploys) == 1


async def test_when_slack_cannot_say_who_is_a_member_nobody_is(
    private: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    _, (card,) = await start_run(private)
    private.fake.fail("conversations.members", error="fetch_members_failed")
    await private.driver.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    await private.fake.wait_for("chat.postEphemeral", told(APPROVER, NOT_A_MEMBER))
    await private.settle()
    assert private.fake.calls_to("views.open") == []
    assert "conversations.members C0CHANNEL failed (fetch_members_failed)" in caplog.text
    await open_modal(private, card, "Approve", user=APPROVER)  # Slack answers again


async def test_an_outsider_whose_notice_came_too_late_is_told_through_the_click(
    private: Bot,
) -> None:
    """No ephemeral message for someone outside the channel, and the notice's trigger
    expired: the click's own response_url still reaches them."""
    _, (card,) = await start_run(private)
    private.fake.fail("views.open", error="expired_trigger_id")
    await private.driver.click(card, "Approve", user=STRANGER, ts=card.answer["ts"])
    (told_,) = await private.fake.wait_for(RESPONSE_URL, lambda c: NOT_A_MEMBER in c.args["text"])
    assert told_.args["response_type"] == "ephemeral"
    assert told_.args["replace_original"] is False  # the card stays as it is
    await private.settle()
    record = await private.store.get_approval(approval_id_of(card))
    assert record is not None
    assert record.status == "pending"
