"""End to end: cards sent to approvers by direct message (`notify`), through the real
server and the fake Slack, where a DM is conversations.open then chat.postMessage. A
decision in either place updates every copy; a copy goes only to people who may see the
call (members of its channel) and may decide it; a decision from a DM is checked as one
from the channel; past `max_dms` the group is mentioned in the thread; Slack's rate
limits are waited out and no DM is lost; the requester hears the outcome by DM."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from store.crypto import KeyRing
from tests.slack.fake_slack import FakeSlack
from tests.slack.governance_harness import clock, told
from tests.slack.reach_harness import (
    LEFT,
    RELEASE_GROUP,
    approve_from,
    dm_card,
    dm_cards,
    dm_to,
    reaching,
    updated,
    value_of,
)
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    OTHER_APPROVER,
    REQUESTER,
    FakeClock,
    buttons_of,
    in_thread,
    start_run,
)

__all__ = ["clock"]

BOTH = f"""
[tools.deploy_release]
approvers = ["{RELEASE_GROUP}"]
notify = "both"
notify_requester = "dm"
"""


async def test_a_dm_approval_updates_the_channel_card_and_every_copy(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, BOTH) as bot:
        root, (card,) = await start_run(bot)
        mine, theirs = await dm_card(bot, APPROVER), await dm_card(bot, OTHER_APPROVER)
        await bot.settle()
        # The group's members who may see the call, never the requester, never LEFT (who
        # is not in the channel), each once; the thread's card keeps its buttons.
        assert sorted(dm_cards(bot.fake)) == sorted([APPROVER, OTHER_APPROVER])
        opened = [c.args["users"] for c in bot.fake.calls_to("conversations.open")]
        assert sorted(opened) == sorted([APPROVER, OTHER_APPROVER])
        assert buttons_of(mine) == buttons_of(card) == [
            "Approve", "Approve with changes", "Reject", "Revoke",
        ]  # fmt: skip
        assert value_of(mine) == value_of(card)
        assert "waits for your decision" in mine.text
        assert f"<#{CHANNEL}>" in mine.text
        assert "Sent by direct message to 2 people." in card.text

        await approve_from(bot, mine, APPROVER, reason="checked the release notes")
        for where in (card, mine, theirs):
            await bot.fake.wait_for("chat.update", updated(where, "Approved"))
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
        # The requester hears it by direct message too.
        (outcome,) = await bot.fake.wait_for("chat.postMessage", lambda c: c.args.get(
            "channel") == bot.fake.dm_channel(REQUESTER))  # fmt: skip
        assert "was approved by" in outcome.text
        assert "checked the release notes" in outcome.text
        await bot.settle()
        assert len(bot.effects.deploys) == 1
        last = [c for c in bot.fake.calls_to("chat.update") if c.args["ts"] == theirs.answer["ts"]]
        assert buttons_of(last[-1]) == ["Revoke"]


async def test_with_dm_the_thread_card_only_reports_and_the_dms_decide(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = f'[tools.deploy_release]\napprovers = ["{RELEASE_GROUP}"]\nnotify = "dm"\n'
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        _, (card,) = await start_run(bot)
        assert buttons_of(card) == ["Revoke"]
        assert "Sent by direct message to 2 people; decide there" in card.text
        mine = await dm_card(bot, APPROVER)
        assert buttons_of(mine)[0] == "Approve"
        await approve_from(bot, mine, APPROVER)
        await bot.fake.wait_for("chat.update", updated(card, "Approved"))
        await bot.settle()
        assert len(bot.effects.deploys) == 1


async def test_past_max_dms_the_group_is_mentioned_in_the_thread(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = (
        f'[tools.deploy_release]\napprovers = ["{APPROVER}", "{RELEASE_GROUP}"]\n'
        'notify = "both"\nmax_dms = 1\n'
    )
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        root, _ = await start_run(bot)
        await dm_card(bot, APPROVER)
        (mention,) = await bot.fake.wait_for(
            "chat.postMessage", in_thread(root, f"<!subteam^{RELEASE_GROUP}>")
        )
        assert "waits for a decision on the card above" in mention.text
        await bot.settle()
        assert list(dm_cards(bot.fake)) == [APPROVER]


async def test_rate_limits_are_waited_out_and_no_dm_is_lost(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    fake_slack.rate_limit("conversations.open", calls=1, per_seconds=1)
    fake_slack.fail("chat.postMessage", status=429, retry_after=1, times=3, after=3)
    async with reaching(fake_slack, tmp_path, keyring, clock, BOTH) as bot:
        _, (card,) = await start_run(bot)
        await dm_card(bot, APPROVER)
        await dm_card(bot, OTHER_APPROVER)
        await bot.settle()
        limited = [c for c in bot.fake.calls if c.answer.get("error") == "ratelimited"]
        assert {c.method for c in limited} == {"conversations.open", "chat.postMessage"}
        assert sorted(dm_cards(bot.fake)) == sorted([APPROVER, OTHER_APPROVER])  # once each
        assert card.ok


async def test_a_copy_whose_sending_failed_is_sent_by_a_later_sweep(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    fake_slack.fail("conversations.open", error="fatal_error", times=2)
    async with reaching(fake_slack, tmp_path, keyring, clock, BOTH) as bot:
        await start_run(bot)
        await bot.settle()
        assert dm_cards(bot.fake) == {}
        await bot.service.sweep()  # the claim still holds: nobody sends it twice at once
        await bot.settle()
        assert dm_cards(bot.fake) == {}
        clock.advance(timedelta(minutes=6))
        await bot.service.sweep()
        await bot.settle()
        assert sorted(dm_cards(bot.fake)) == sorted([APPROVER, OTHER_APPROVER])
        await bot.service.sweep()
        await bot.settle()
        assert len([c for c in bot.fake.calls_to("chat.postMessage") if dm_to(
            bot.fake, APPROVER)(c)]) == 1  # fmt: skip


async def test_a_decision_from_a_dm_is_checked_as_one_from_the_channel(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, BOTH) as bot:
        _, (card,) = await start_run(bot)
        mine = await dm_card(bot, APPROVER)
        await bot.settle()
        fake_slack.channel_members[CHANNEL].remove(APPROVER)  # left the channel since
        clock.advance(timedelta(seconds=61))  # past the membership cache
        await bot.driver.click(mine, "Approve", user=APPROVER, ts=mine.answer["ts"])
        await bot.fake.wait_for("chat.postEphemeral", told(APPROVER, "not a member"))
        await bot.settle()
        assert bot.fake.calls_to("views.open") == []
        record = await bot.store.get_approval(value_of(card))
        assert record is not None
        assert record.status == "pending"
        assert (await bot.store.votes([record.approval_id]))[record.approval_id] == []


async def test_a_copy_never_goes_to_someone_outside_the_channel_or_to_the_requester(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    fake_slack.usergroups[RELEASE_GROUP] = [REQUESTER, LEFT]
    policy = BOTH.replace(f'["{RELEASE_GROUP}"]', f'["{RELEASE_GROUP}", "{APPROVER}"]')
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        fake_slack.usergroups[RELEASE_GROUP] = [REQUESTER, LEFT]
        await start_run(bot)
        await dm_card(bot, APPROVER)
        await bot.settle()
        assert list(dm_cards(bot.fake)) == [APPROVER]
        assert [c.args["users"] for c in bot.fake.calls_to("conversations.open")] == [APPROVER]


async def test_dm_cards_of_long_hostile_arguments_fit_block_kit(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = f'[tools.echo]\napprovers = ["{RELEASE_GROUP}"]\nnotify = "both"\n'
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        await bot.driver.command("/agent", "@echo say it", user=REQUESTER, channel=CHANNEL)
        mine = await dm_card(bot, APPROVER)
        await bot.settle()
        assert mine.ok  # the fake refuses blocks past Block Kit's limits (invalid_blocks)
        assert "<!channel>" not in mine.text
        assert "Read all arguments" in buttons_of(mine)
        assert not [c for c in bot.fake.calls if c.answer.get("error") == "invalid_blocks"]
        assert all(c.ok for c in bot.fake.calls_to("chat.postMessage"))
