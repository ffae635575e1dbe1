"""A bot whose policy reaches approvers by direct message, escalation and stand-ins, on
an injected clock; the people of its channel and groups in the fake Slack; helpers to
find the cards the bot sent someone by direct message and to decide from them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.policy.loading import parse_policy
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    CHANNEL_MEMBERS,
    OTHER_APPROVER,
    Bot,
    FakeClock,
    open_modal,
    start_bot,
    stop_bot,
)

ALICE = "U0ALICE01"
BOB = "U0BOB0001"
CAROL = "U0CAROL01"
ONCALL = "U0ONCALL1"
LEFT = "U0LEFT001"  # in the release group, not in the channel
RELEASE_GROUP = "S0RELEASE"
LEADS_GROUP = "S0LEADS01"
MEMBERS = [*CHANNEL_MEMBERS, ALICE, BOB, CAROL, ONCALL]


@asynccontextmanager
async def reaching(
    fake: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock, policy: str
) -> AsyncIterator[Bot]:
    """The bot under `policy` (TOML), CHANNEL with MEMBERS, the release group of the two
    approvers and LEFT, the leads group of CAROL."""
    fake.channel_members[CHANNEL] = list(MEMBERS)
    fake.usergroups[RELEASE_GROUP] = [APPROVER, OTHER_APPROVER, LEFT]
    fake.usergroups[LEADS_GROUP] = [CAROL]
    parsed = parse_policy(policy, source="reach-policy.toml")
    bot, runner, session = await start_bot(
        fake, tmp_path / "approvals.db", keyring, policy=parsed, clock=clock
    )
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


def has_buttons(call: Call) -> bool:
    return any(block.get("type") == "actions" for block in call.args.get("blocks") or [])


def dm_to(fake: FakeSlack, user: str) -> Callable[[Call], bool]:
    """Matches a card posted in the bot's direct messages with `user`."""
    return lambda c: c.args.get("channel") == fake.dm_channel(user) and c.ok and has_buttons(c)


async def dm_card(bot: Bot, user: str) -> Call:
    """The card the bot sent `user` by direct message (waits for it)."""
    (card,) = await bot.fake.wait_for("chat.postMessage", dm_to(bot.fake, user))
    return card


def dm_cards(fake: FakeSlack) -> dict[str, Call]:
    """Every card posted by direct message so far, by the person it went to."""
    return {
        fake.ims[c.args["channel"]]: c
        for c in fake.calls_to("chat.postMessage")
        if c.args.get("channel") in fake.ims and c.ok and has_buttons(c)
    }


async def approve_from(bot: Bot, card: Call, user: str, *, reason: str = "fine") -> None:
    view = await open_modal(bot, card, "Approve", user=user)
    reply = await bot.driver.submit(view, user=user, reason=reason)
    assert (reply.status, reply.text) == (200, "")


def updated(card: Call, needle: str) -> Callable[[Call], bool]:
    """Matches a chat.update of `card` (where it was posted) containing `needle`."""
    return lambda c: (
        c.args.get("ts") == card.answer["ts"]
        and c.args.get("channel") == card.args["channel"]
        and needle in c.text
    )


def texts(calls: list[Call]) -> list[str]:
    return [str(c.args.get("text", "")) for c in calls]


def value_of(card: Call) -> Any:
    return card.args["blocks"][-1]["elements"][0]["value"]
