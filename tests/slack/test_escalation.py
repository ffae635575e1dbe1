"""End to end: escalation on a fake clock. Nobody decides by `escalate_after`: the next
approvers become eligible (not a second before), are told in the thread (and by direct
message where the rule sends them), and the card says whom it escalated to and when;
several steps; the expiry still ends it; a call decided first is never escalated."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, FakeSlack
from tests.slack.governance_harness import clock, told
from tests.slack.reach_harness import (
    CAROL,
    LEADS_GROUP,
    ONCALL,
    RELEASE_GROUP,
    approve_from,
    dm_card,
    dm_cards,
    reaching,
    updated,
    value_of,
)
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    Bot,
    FakeClock,
    in_thread,
    open_modal,
    start_run,
)

__all__ = ["clock"]

STEPS = f"""
[defaults]
expires_after = "2h"
remind_before = "0s"

[tools.deploy_release]
approvers = ["{RELEASE_GROUP}"]
escalation = [{{ after = "30m", to = ["{ONCALL}"] }}, {{ after = "1h", to = ["{LEADS_GROUP}"] }}]
"""


async def listed(bot: Bot, user: str) -> str:
    """`/approvals list` as `user` sees it."""
    before = len(bot.fake.calls_to(RESPONSE_URL))
    await bot.driver.command("/approvals", "list", user=user, channel=CHANNEL)
    calls = await bot.fake.wait_for(RESPONSE_URL, count=before + 1)
    return str(calls[-1].args["text"])


def escalations(messages: list[str]) -> list[str]:
    return [m for m in messages if "escalated to you" in m]


async def test_escalation_at_the_set_time_then_the_escalated_approver_decides(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, STEPS) as bot:
        root, (card,) = await start_run(bot)
        clock.advance(timedelta(minutes=29, seconds=59))
        await bot.service.sweep()
        await bot.driver.click(card, "Approve", user=ONCALL, ts=card.answer["ts"])
        await bot.fake.wait_for("chat.postEphemeral", told(ONCALL, "not an approver"))
        await bot.settle()
        assert not [c for c in bot.fake.calls_to("chat.postMessage") if "escalated" in c.text]
        assert value_of(card) not in await listed(bot, ONCALL)

        clock.advance(timedelta(seconds=2))
        await bot.service.sweep()
        (said,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "escalated to you"))
        assert f"<@{ONCALL}>" in said.text
        assert "within 30m" in said.text
        (shown,) = await bot.fake.wait_for("chat.update", updated(card, "Escalated to"))
        assert f"Escalated to <@{ONCALL}>" in shown.text
        await bot.settle()
        assert value_of(card) in await listed(bot, ONCALL)

        await approve_from(bot, card, ONCALL, reason="on call, checked")
        await bot.fake.wait_for("chat.update", updated(card, "Approved"))
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
        await bot.settle()
        assert len(bot.effects.deploys) == 1
        audited = [e.kind for e in await bot.store.audit_events(approval_id=value_of(card))]
        assert audited.count("escalated") == 1
        await bot.service.sweep()  # the second step's time comes, the call is decided
        clock.advance(timedelta(hours=1))
        await bot.service.sweep()
        await bot.settle()
        posted = [c.text for c in bot.fake.calls_to("chat.postMessage")]
        assert len(escalations(posted)) == 1


async def test_several_steps_then_the_expiry_ends_it(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, STEPS) as bot:
        root, (card,) = await start_run(bot)
        for minutes in (31, 30):
            clock.advance(timedelta(minutes=minutes))
            await bot.service.sweep()
            await bot.settle()
        posted = [c.text for c in bot.fake.calls_to("chat.postMessage")]
        assert len(escalations(posted)) == 2
        assert f"<!subteam^{LEADS_GROUP}>" in escalations(posted)[1]
        last = [c for c in bot.fake.calls_to("chat.update") if c.args["ts"] == card.answer["ts"]]
        assert last[-1].text.count("Escalated to") == 2
        await open_modal(bot, card, "Approve", user=CAROL)  # a lead, by the second step

        clock.advance(timedelta(hours=1))
        await bot.service.sweep()
        await bot.fake.wait_for("chat.update", updated(card, "Expired"))
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "in time, so it expired"))
        await bot.settle()
        assert bot.effects.deploys == []


async def test_a_call_decided_before_its_step_is_never_escalated(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, STEPS) as bot:
        _, (card,) = await start_run(bot)
        clock.advance(timedelta(minutes=29))
        await approve_from(bot, card, APPROVER)
        await bot.settle()
        clock.advance(timedelta(minutes=40))
        await bot.service.sweep()
        await bot.settle()
        assert escalations([c.text for c in bot.fake.calls_to("chat.postMessage")]) == []
        steps = await bot.store.escalations(value_of(card))
        assert [s.outcome for s in steps] == ["skipped", "skipped"]


async def test_escalation_sends_its_people_the_card_where_the_rule_sends_dms(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = STEPS.replace(
        'approvers = ["S0RELEASE"]', 'approvers = ["S0RELEASE"]\nnotify = "both"'
    )
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        await start_run(bot)
        await bot.settle()
        assert ONCALL not in dm_cards(bot.fake)
        clock.advance(timedelta(minutes=31))
        await bot.service.sweep()
        mine = await dm_card(bot, ONCALL)
        assert "Escalated to" in mine.text
        await approve_from(bot, mine, ONCALL)
        await bot.settle()
        assert len(bot.effects.deploys) == 1


REMINDED_AFTER_A_STEP = f"""
[defaults]
expires_after = "2h"
remind_before = "1h"

[tools.deploy_release]
approvers = ["{RELEASE_GROUP}"]
escalation = [{{ after = "30m", to = ["{ONCALL}"] }}, {{ after = "90m", to = ["{LEADS_GROUP}"] }}]
"""


async def test_the_reminder_after_an_escalation_names_whom_it_escalated_to(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, REMINDED_AFTER_A_STEP) as bot:
        root, _ = await start_run(bot)
        clock.advance(timedelta(minutes=31))
        await bot.service.sweep()
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "escalated to you"))
        clock.advance(timedelta(minutes=30))  # one hour before the expiry: the reminder
        await bot.service.sweep()
        (reminder,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "still waits"))
        assert f"<@{ONCALL}>" in reminder.text  # the step in force
        assert f"<!subteam^{RELEASE_GROUP}>" in reminder.text  # the approvers still may
        assert LEADS_GROUP not in reminder.text  # a step not yet due is nobody's yet
