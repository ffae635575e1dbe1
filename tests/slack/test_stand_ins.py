"""End to end: `/approvals away until DATE stand-in @person` and `/approvals back`. The
cards that would reach the away approver by direct message reach their stand-in, who
may decide the calls the away person may decide and no other: not a tool the away
person may not approve, not their own call, not the away person's own call, and never
a second time with the same person's say; all of it audited, and ended by `back`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, FakeSlack
from tests.slack.governance_harness import clock, told
from tests.slack.reach_harness import (
    ALICE,
    BOB,
    CAROL,
    approve_from,
    dm_card,
    dm_cards,
    reaching,
    updated,
    value_of,
)
from tests.slack.slack_harness import (
    CHANNEL,
    REQUESTER,
    Bot,
    FakeClock,
    card_calls,
    in_thread,
    start_run,
)

__all__ = ["clock"]

POLICY = f"""
[tools.deploy_release]
approvers = ["{ALICE}", "{CAROL}"]
notify = "dm"

[tools.restart_service]
approvers = ["{CAROL}"]
"""


async def command(bot: Bot, text: str, *, user: str) -> str:
    """`/approvals <text>`: its answer (at once when the syntax is wrong, else later
    through the response_url)."""
    before = len(bot.fake.calls_to(RESPONSE_URL))
    reply = await bot.driver.command("/approvals", text, user=user, channel=CHANNEL)
    if reply.text:
        return reply.text
    calls = await bot.fake.wait_for(RESPONSE_URL, count=before + 1)
    return str(calls[-1].args["text"])


async def away(bot: Bot, who: str = ALICE, stand_in: str = BOB) -> str:
    return await command(bot, f"away until 2026-12-24 stand-in <@{stand_in}|x>", user=who)


async def test_the_stand_in_gets_the_card_and_decides_what_the_away_person_may(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, POLICY) as bot:
        said = await away(bot)
        assert f"You are away until 2026-12-24 00:00 UTC; <@{BOB}> stands in for you" in said
        root, (card,) = await start_run(bot)
        mine = await dm_card(bot, BOB)
        await dm_card(bot, CAROL)
        await bot.settle()
        assert sorted(dm_cards(bot.fake)) == sorted([BOB, CAROL])  # not Alice: she is away
        assert f"the stand-in of <@{ALICE}>" in mine.text
        assert value_of(card) in await command(bot, "list", user=BOB)  # and App Home's list
        await approve_from(bot, mine, BOB, reason="for Alice")
        await bot.fake.wait_for("chat.update", updated(card, "Approved"))
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
        await bot.settle()
        assert len(bot.effects.deploys) == 1
        trail = await bot.store.audit_events()
        assert [(e.kind, e.actor, e.detail.get("stand_in")) for e in trail][:1] == [
            ("away_set", ALICE, BOB)
        ]


async def test_a_stand_in_cannot_approve_what_the_away_person_could_not(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = POLICY.replace('notify = "dm"', 'notify = "both"')  # buttons in the channel too
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        await away(bot)
        # A tool Alice may not approve.
        await bot.driver.command("/agent", "@restarter restart", user=REQUESTER, channel=CHANNEL)
        (restart,) = await bot.fake.wait_for("chat.postMessage", lambda c: c in card_calls(
            bot.fake) and "restart_service" in c.text)  # fmt: skip
        await bot.driver.click(restart, "Approve", user=BOB, ts=restart.answer["ts"])
        await bot.fake.wait_for("chat.postEphemeral", told(BOB, "not an approver"))
        # Bob's own call, and Alice's own call: neither may Bob decide.
        for requester in (BOB, ALICE):
            await bot.driver.command("/agent", "deploy", user=requester, channel=CHANNEL)
        await bot.settle()
        in_channel = [c for c in card_calls(bot.fake) if c.args["channel"] == CHANNEL]
        deploys = [c for c in in_channel if "deploy_release" in c.text]
        assert len(deploys) == 2
        for card in deploys:
            await bot.driver.click(card, "Approve", user=BOB, ts=card.answer["ts"])
        await bot.fake.wait_for("chat.postEphemeral", told(BOB, "someone else"))
        await bot.fake.wait_for("chat.postEphemeral", told(BOB, "not an approver"), count=2)
        await bot.settle()
        assert bot.fake.calls_to("views.open") == []
        # Nor does Bob get Alice's own call by DM (only Carol does).
        alices = next(c for c in deploys if f"requested by <@{ALICE}>" in c.text)
        copies = await bot.store.approval_copies(value_of(alices))
        assert [c.recipient for c in copies] == [CAROL]


async def test_back_ends_it_and_the_stand_in_decides_nothing_more(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, POLICY) as bot:
        await away(bot)
        await start_run(bot)
        mine = await dm_card(bot, BOB)
        await bot.settle()
        assert "Welcome back" in await command(bot, "back", user=ALICE)
        assert "not away" in await command(bot, "back", user=ALICE)
        await bot.driver.click(mine, "Approve", user=BOB, ts=mine.answer["ts"])
        await bot.fake.wait_for("chat.postEphemeral", told(BOB, "not an approver"))
        kinds = [(e.kind, e.detail.get("why")) for e in await bot.store.audit_events()]
        assert ("away_ended", "back") in kinds


async def test_one_persons_say_counts_once_between_them_and_their_stand_in(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    policy = POLICY.replace('notify = "dm"', 'notify = "both"\nrequired_approvals = 2')
    async with reaching(fake_slack, tmp_path, keyring, clock, policy) as bot:
        await away(bot)
        _, (card,) = await start_run(bot)
        mine = await dm_card(bot, BOB)
        await approve_from(bot, card, ALICE, reason="from my phone")  # away, still an approver
        await bot.settle()
        await approve_from(bot, mine, BOB, reason="for Alice")
        await bot.fake.wait_for("chat.postEphemeral", told(BOB, "one person's say counts once"))
        await bot.settle()
        record = await bot.store.get_approval(value_of(card))
        assert record is not None
        assert record.status == "pending"
        refused = [e for e in await bot.store.audit_events() if e.kind == "refused"]
        assert [(e.actor, e.detail["why"]) for e in refused] == [(BOB, "same_say")]
        await approve_from(bot, await dm_card(bot, CAROL), CAROL)
        await bot.settle()
        assert len(bot.effects.deploys) == 1


async def test_away_is_checked_before_anything_is_stored(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with reaching(fake_slack, tmp_path, keyring, clock, POLICY) as bot:
        assert "has passed" in await command(bot, "away until 2025-01-01", user=ALICE)
        assert "yourself" in await command(
            bot, f"away until 2026-12-24 stand-in <@{ALICE}>", user=ALICE
        )
        assert "does not name a person" in await command(
            bot, "away until 2026-12-24 stand-in @bob", user=ALICE
        )
        assert "at most 366 days" in await command(bot, "away until 2028-01-01", user=ALICE)
        assert await bot.store.audit_events() == []
        clock.advance(timedelta(days=400))
        assert "has passed" in await command(bot, "away until 2026-12-24", user=ALICE)
