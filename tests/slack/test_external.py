"""End to end: requests naming another team, organisation or app (a Slack Connect partner
in a shared channel, another install) are refused with a clear answer and audited; the
policy may let external people act, never another app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.policy.loading import parse_policy
from store.crypto import KeyRing
from store.records import AuditEvent
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    in_thread,
    open_modal,
    start_bot,
    start_chat,
    start_run,
    stop_bot,
    thread_message,
)

THEIR_TEAM = "T0THEIRS"


async def refusals(bot: Bot) -> list[AuditEvent]:
    return [event for event in await bot.store.audit_events() if event.kind == "refused"]


def approval_id_of(card: Any) -> str:
    value: str = card.args["blocks"][-1]["elements"][0]["value"]
    return value


async def test_a_click_by_someone_of_another_team_opens_nothing(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    click = bot.driver.click_payload(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    click["user"]["team_id"] = THEIR_TEAM
    reply = await bot.driver.interactive(click)
    assert (reply.status, reply.text) == (200, "")
    (told,) = await bot.fake.wait_for("chat.postEphemeral", lambda c: c.args["user"] == APPROVER)
    assert "workspace it is installed in" in told.text
    await bot.settle()
    assert bot.fake.calls_to("views.open") == []
    (refused,) = await refusals(bot)
    assert refused.actor == APPROVER
    assert refused.approval_id == approval_id_of(card)
    assert refused.detail == {
        "why": "external",
        "field": "user.team_id",
        "value": THEIR_TEAM,
        "request": "block_actions",
    }


async def test_a_decision_submitted_from_another_team_is_not_counted(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    submission = bot.driver.submission_payload(view, user=APPROVER, reason="looks fine")
    submission["team"] = {"id": THEIR_TEAM}
    reply = await bot.driver.interactive(submission)
    assert reply.status == 200
    answer = reply.json()
    assert answer["response_action"] == "update"
    assert "workspace it is installed in" in answer["view"]["blocks"][0]["text"]["text"]
    await bot.settle()
    record = await bot.store.get_approval(approval_id_of(card))
    assert record is not None
    assert record.status == "pending"
    assert (await bot.store.votes([record.approval_id]))[record.approval_id] == []
    assert bot.effects.deploys == []
    assert [event.detail["field"] for event in await refusals(bot)] == ["team.id"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"team_id": THEIR_TEAM}, "team_id"),
        ({"enterprise_id": "E0THEIRS"}, "enterprise_id"),
        ({"api_app_id": "A0ANOTHER"}, "api_app_id"),
    ],
)
async def test_a_command_from_another_team_org_or_app_starts_nothing(
    bot: Bot, fields: dict[str, str], field: str
) -> None:
    reply = await bot.driver.command(
        "/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL, fields=fields
    )
    assert reply.status == 200
    assert reply.json()["response_type"] == "ephemeral"
    assert "workspace it is installed in" in reply.json()["text"]
    await bot.settle()
    assert bot.fake.calls_to("chat.postMessage") == []
    assert await bot.store.list_runs() == []
    ((refused),) = await refusals(bot)
    assert (refused.actor, refused.detail["field"]) == (REQUESTER, field)


async def test_a_thread_reply_from_another_team_reaches_no_agent(bot: Bot) -> None:
    root = await start_chat(bot)
    await bot.settle()
    reply = thread_message(root, "tell me more", user="U0PARTNER", ts="1800000000.000500")
    answer = await bot.driver.event({**reply, "user_team": THEIR_TEAM})
    assert (answer.status, answer.text) == (200, "")
    await bot.settle()
    assert len(bot.models["chat"].requests) == 1
    assert [call for call in bot.fake.calls if in_thread(root, "Second")(call)] == []
    ((refused),) = await refusals(bot)
    assert (refused.actor, refused.detail["field"]) == ("U0PARTNER", "event.user_team")


async def test_a_partners_channel_talk_is_dropped_without_filling_the_audit(bot: Bot) -> None:
    talk = {"type": "message", "channel": CHANNEL, "user": "U0PARTNER", "text": "hi", "ts": "5.0"}
    for index in range(3):
        reply = await bot.driver.event({**talk, "ts": f"5.{index}", "user_team": THEIR_TEAM})
        assert (reply.status, reply.text) == (200, "")
    await bot.settle()
    assert await refusals(bot) == []
    assert bot.fake.calls_to("chat.postEphemeral") == []


async def test_external_people_act_when_the_policy_allows_but_never_another_app(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    policy = parse_policy("allow_external_users = true", source="test-policy.toml")
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, policy=policy
    )
    try:
        _, (card,) = await start_run(bot)
        other_app = bot.driver.click_payload(card, "Approve", user=APPROVER, ts="1")
        other_app["api_app_id"] = "A0ANOTHER"
        await bot.driver.interactive(other_app)
        await bot.fake.wait_for("chat.postEphemeral", lambda c: c.args["user"] == APPROVER)

        click = bot.driver.click_payload(card, "Approve", user=APPROVER, ts=card.answer["ts"])
        click["user"]["team_id"] = THEIR_TEAM
        await bot.driver.interactive(click)
        (opened,) = await bot.fake.wait_for("views.open")
        submission = bot.driver.submission_payload(
            opened.args["view"], user=APPROVER, reason="partner on call"
        )
        submission["user"]["team_id"] = THEIR_TEAM
        await bot.driver.interactive(submission)
        await bot.fake.wait_for("chat.update", lambda c: "Approved" in c.text)
        await bot.settle()
        assert len(bot.effects.deploys) == 1
        assert [event.detail["field"] for event in await refusals(bot)] == ["api_app_id"]
    finally:
        await stop_bot(bot, runner, session)


async def test_start_up_stops_when_slack_cannot_say_who_the_bot_is(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    fake_slack.fail("auth.test", error="invalid_auth")
    with pytest.raises(ConfigError, match=r"^SLACK_BOT_TOKEN rejected by Slack: invalid_auth$"):
        await start_bot(fake_slack, tmp_path / "approvals.db", keyring)
