"""A bot governed by a policy with an approver group in the fake Slack, on an injected
clock; helpers to decide from cards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.policy.loading import parse_policy
from bot.policy.rules import Policy
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    OTHER_APPROVER,
    Bot,
    FakeClock,
    open_modal,
    start_bot,
    stop_bot,
)

RELEASE_GROUP = "S0RELEASE"
OUTSIDER = "U0OUTSIDE"
ADMIN = "U0ADMIN01"
POLICY_TOML = f"""
admins = ["{ADMIN}"]

[defaults]
expires_after = "1h"
remind_before = "10m"

[tools.deploy_release]
approvers = ["{RELEASE_GROUP}"]
required_approvals = 2

[tools.restart_service]
approvers = ["{RELEASE_GROUP}"]
"""


def governance_policy() -> Policy:
    return parse_policy(POLICY_TOML, source="test-policy.toml")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def governed(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> AsyncIterator[Bot]:
    fake_slack.usergroups[RELEASE_GROUP] = [APPROVER, OTHER_APPROVER]
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, policy=governance_policy(), clock=clock
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


def approval_id_of(card: Call) -> str:
    value: str = card.args["blocks"][-1]["elements"][0]["value"]
    return value


async def vote(bot: Bot, card: Call, user: str, *, reason: str = "looks right") -> dict[str, Any]:
    """Approve `card` as `user` through the modal; returns the modal."""
    view = await open_modal(bot, card, "Approve", user=user)
    reply = await bot.driver.submit(view, user=user, reason=reason)
    assert (reply.status, reply.text) == (200, "")
    return view


def card_update(card: Call, needle: str) -> Any:
    """Matches a chat.update of `card` whose content contains `needle`."""
    return lambda c: c.args.get("ts") == card.answer["ts"] and needle in c.text


def told(user: str, needle: str) -> Any:
    return lambda c: c.args.get("user") == user and needle in c.text
