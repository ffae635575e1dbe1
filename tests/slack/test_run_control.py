"""Run control in Slack, through the real Bolt app and the fake Web API: a decision for
the rest of the run from the decision modal, the card that says so, `/approvals cancel`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.policy.loading import parse_policy
from bot.slack.decision_modal import STANDING_ACTION_ID, STANDING_BLOCK_ID, STANDING_VALUE
from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, FakeSlack
from tests.slack.governance_harness import approval_id_of, card_update
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    in_thread,
    labels,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

STANDING_POLICY = "[tools.deploy_release]\nallow_always = true\n"


@pytest.fixture
async def standing_bot(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> AsyncIterator[Bot]:
    policy = parse_policy(STANDING_POLICY, source="standing.toml")
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, policy=policy
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


def checked(payload: dict[str, Any]) -> dict[str, Any]:
    """The submission with "for the rest of the run" ticked, as Slack sends it."""
    payload["view"]["state"]["values"][STANDING_BLOCK_ID] = {
        STANDING_ACTION_ID: {
            "type": "checkboxes",
            "selected_options": [{"value": STANDING_VALUE, "text": {"type": "plain_text"}}],
        }
    }
    return payload


async def test_approve_for_the_rest_of_the_run_from_the_modal(standing_bot: Bot) -> None:
    bot = standing_bot
    root, (first, second) = await start_run(bot, "@twin deploy both", cards=2)

    view = await open_modal(bot, first, "Approve", user=APPROVER)
    assert labels(view) == ["Reason", "For the rest of the run"]
    payload = bot.driver.submission_payload(view, user=APPROVER, reason="rolling out")
    reply = await bot.driver.interactive(checked(payload))
    assert (reply.status, reply.text) == (200, "")

    (stands,) = await bot.fake.wait_for(
        "chat.update", card_update(first, "Stands for the rest of this run")
    )
    assert f"/approvals revoke {approval_id_of(first)}" in stands.text
    (other,) = await bot.fake.wait_for("chat.update", card_update(second, "Approved"))
    assert "standing decision" in other.text
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Both calls are settled."))
    await bot.settle()
    assert [deploy[:2] for deploy in bot.effects.deploys] == [
        ("payments", "1.2.3"),
        ("ledger", "9.9.9"),
    ]


async def test_the_option_is_offered_only_where_the_policy_allows_it(bot: Bot) -> None:
    _root, (card,) = await start_run(bot, "deploy payments 1.2.3")
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert labels(view) == ["Reason"]


async def test_cancel_a_run_by_command(bot: Bot) -> None:
    root, (card,) = await start_run(bot, "deploy payments 1.2.3")
    [run] = await bot.store.list_runs()

    reply = await bot.driver.command(
        "/approvals", f"cancel {run.run_id} wrong release", user=REQUESTER, channel=CHANNEL
    )
    assert (reply.status, reply.text) == (200, "")

    (answer,) = await bot.fake.wait_for(RESPONSE_URL)
    assert "Cancelled run" in answer.text
    (closed,) = await bot.fake.wait_for("chat.update", card_update(card, "Revoked"))
    assert "run cancelled: wrong release" in closed.text
    (told,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "cancelled this run"))
    assert "wrong release" in told.text
    await bot.settle()
    assert bot.effects.deploys == []
    cancelled = await bot.store.get_run(run.run_id)
    assert cancelled is not None
    assert cancelled.status == "cancelled"


async def test_someone_else_may_not_cancel_and_is_told_why(bot: Bot) -> None:
    await start_run(bot, "deploy payments 1.2.3")
    [run] = await bot.store.list_runs()
    await bot.driver.command("/approvals", f"cancel {run.run_id}", user=APPROVER, channel=CHANNEL)
    (answer,) = await bot.fake.wait_for(RESPONSE_URL)
    assert "only the run's requester or an admin may cancel it" in answer.text
    still = await bot.store.get_run(run.run_id)
    assert still is not None
    assert still.status == "paused"
