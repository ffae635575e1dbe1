"""Slack answering 429 (with Retry-After) and 5xx in bursts, as in an outage: nothing
the bot posts is lost, and each run's thread and each review card is posted exactly
once, late rather than never (bot.slack.patience)."""

from __future__ import annotations

from collections import Counter

from tests.slack.fake_slack import Call
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
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
