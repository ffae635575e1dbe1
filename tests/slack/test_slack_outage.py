"""Slack answering 429 (with Retry-After) and 5xx in bursts, as in an outage: nothing
the bot posts is lost, and each run's thread and each review card is posted exactly
once, late rather than never (bot.slack.patience)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from store.records import ApprovalRecord
from tests.polling import until
from tests.slack.fake_slack import Call
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    buttons_of,
    card_calls,
    in_thread,
    start_run,
)

RUNS = 3


def posted(bot: Bot) -> list[Call]:
    return [call for call in bot.fake.calls_to("chat.postMessage") if call.ok]


async def test_a_burst_of_429s_and_5xx_loses_no_thread_and_no_card(bot: Bot) -> None:
    bot.fake.fail("chat.postMessage", times=4, status=500, error="internal_error")
    bot.fake.fail("chat.postMessage", times=3, status=429, retry_after=1)
    bot.fake.fail("chat.postMessage", times=2, status=503, error="service_unavailable")
    for number in range(RUNS):
        task = f"deploy payments 1.2.{number}"
        reply = await bot.driver.command("/agent", task, user=REQUESTER, channel=CHANNEL)
        assert reply.status == 200
    await bot.settle()

    refused = [call for call in bot.fake.calls_to("chat.postMessage") if not call.ok]
    assert len(refused) == 4 + 3 + 2  # the whole burst met the bot
    roots = [call for call in posted(bot) if "thread_ts" not in call.args]
    assert len(roots) == RUNS  # one thread per run, none lost
    threads = {root.answer["ts"] for root in roots}
    cards = [call for call in card_calls(bot.fake) if call.ok]
    assert len(cards) == RUNS
    assert {card.args["thread_ts"] for card in cards} == threads  # each in its run's thread
    approvals = await bot.store.list_approvals()
    assert Counter(a.slack_ts for a in approvals) == Counter(c.answer["ts"] for c in cards)


async def test_a_decision_during_a_burst_updates_the_card_and_posts_the_answer(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    await bot.settle()
    [approval] = await bot.store.list_approvals()
    bot.fake.fail("chat.update", times=3, status=502, error="bad_gateway")
    bot.fake.fail("chat.postMessage", times=3, status=500, error="internal_error")
    await bot.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await bot.settle()

    updates = [call for call in bot.fake.calls_to("chat.update") if call.ok]
    assert [call.args["ts"] for call in updates] == [card.answer["ts"]]
    answers = [c for c in posted(bot) if c in await bot.fake.wait_for(
        "chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))]  # fmt: skip
    assert len(answers) == 1
    assert len(bot.effects.deploys) == 1


async def test_a_card_posted_after_its_call_was_decided_shows_the_decision(bot: Bot) -> None:
    # Slack goes down as the card is first sent: the card waits Slack out while an
    # approver rejects the call elsewhere (the CLI, a DM copy); the card that lands late
    # must not keep live buttons for a call that is no longer pending.
    async def outage_at_the_card(method: str, args: Mapping[str, Any], token: str | None) -> None:
        if method == "chat.postMessage" and "thread_ts" in args and args.get("blocks"):
            bot.fake.go_down("chat.postMessage", status=503, error="service_unavailable")
            bot.fake.before_answer = None

    bot.fake.before_answer = outage_at_the_card
    reply = await bot.driver.command(
        "/agent", "deploy payments 1.2.3", user=REQUESTER, channel=CHANNEL
    )
    assert reply.status == 200
    approval = await until(lambda: _only_approval(bot), "the call waits for approval")
    await until(lambda: _refused_card(bot), "the card met the outage")
    await bot.service.decide(approval.approval_id, approve=False, decider=APPROVER, reason="no")
    bot.fake.come_back("chat.postMessage")
    await bot.settle()

    [card] = [call for call in card_calls(bot.fake) if call.ok]
    updates = [
        c for c in bot.fake.calls_to("chat.update") if c.ok and c.args["ts"] == card.answer["ts"]
    ]
    assert updates, "the late card was never brought up to date"
    assert buttons_of(updates[-1]) == []
    assert "Rejected" in updates[-1].text
    assert bot.effects.deploys == []


async def _only_approval(bot: Bot) -> ApprovalRecord | None:
    approvals = await bot.store.list_approvals()
    return approvals[0] if approvals else None


async def _refused_card(bot: Bot) -> bool | None:
    refused = [
        c for c in bot.fake.calls_to("chat.postMessage") if not c.ok and "thread_ts" in c.args
    ]
    return True if refused else None
