"""Slack down for a minute: the bot loses nothing and posts each card exactly once.

    python bench/slack_outage.py [--seconds 60] [--runs 20] [--flip-seconds 5]

The real bot (Bolt app, service, SQLite store; the Slack tests' harness and scripted
agent) talks to the fake Slack Web API of the tests, which for `--seconds` answers every
chat.postMessage and chat.update with a failure, alternating every `--flip-seconds`
between 429 (Retry-After 2) and 503. `--runs` runs are asked for with `/agent` while it
is down (each acknowledged at once), spread over the outage; once Slack is back, each
run's card is approved and the script waits for the answers, then a second, short
outage (503 for 5 s) lands while the decisions are taken (each card's update then
waits up to 20 s: bot.slack.notifier).

Counted: the calls Slack refused; per run, its root message and its review cards
posted (each exactly once is the pass mark), every approval's `slack_ts` set to its
card, the answers posted and the effects applied (one per run); and how long after
Slack came back the last card was posted. Exits 1 when anything was lost or doubled.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.crypto import KeyRing  # noqa: E402
from store.keys import generate_key  # noqa: E402
from tests.polling import until  # noqa: E402
from tests.slack.fake_slack import Call, FakeSlack  # noqa: E402
from tests.slack.slack_harness import (  # noqa: E402
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    card_calls,
    start_bot,
    stop_bot,
)

DOWN_METHODS = ("chat.postMessage", "chat.update")
WAIT_SECONDS = 900.0
SECOND_OUTAGE_SECONDS = 5.0


async def outage(
    fake: FakeSlack, *, seconds: float, flip_seconds: float, limited: bool = True
) -> None:
    """Slack fails every post and update for `seconds`, 429 and 503 in turns (starting
    with 429 when `limited`)."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        for method in DOWN_METHODS:
            if limited:
                fake.go_down(method, status=429, retry_after=2)
            else:
                fake.go_down(method, status=503, error="service_unavailable")
        limited = not limited
        await asyncio.sleep(min(flip_seconds, max(ends - time.monotonic(), 0)))
    for method in DOWN_METHODS:
        fake.come_back(method)


async def ask_during(bot: Bot, runs: int, seconds: float) -> None:
    for number in range(runs):
        reply = await bot.driver.command(
            "/agent", f"deploy payments 1.2.{number}", user=REQUESTER, channel=CHANNEL
        )
        assert reply.status == 200, reply
        await asyncio.sleep(seconds / max(runs, 1))


async def wait_until(what: str, check: Callable[[], Awaitable[bool | None]]) -> float:
    started = time.monotonic()
    await until(check, f"not within {WAIT_SECONDS:.0f} s: {what}", seconds=WAIT_SECONDS)
    print(f"  {what}: {time.monotonic() - started:.1f} s")
    return time.monotonic() - started


async def measure(args: argparse.Namespace) -> int:
    fake = FakeSlack()
    await fake.start()
    with tempfile.TemporaryDirectory() as workdir:
        bot, runner, session = await start_bot(
            fake, Path(workdir) / "approvals.db", KeyRing([generate_key("k1")])
        )
        try:
            return await scenario(bot, fake, args)
        finally:
            await stop_bot(bot, runner, session)
            await fake.close()


async def scenario(bot: Bot, fake: FakeSlack, args: argparse.Namespace) -> int:
    print(f"Slack down {args.seconds:.0f} s (429 and 503 every {args.flip_seconds:.0f} s), "
          f"{args.runs} runs asked meanwhile")  # fmt: skip
    down = asyncio.create_task(outage(fake, seconds=args.seconds, flip_seconds=args.flip_seconds))
    await ask_during(bot, args.runs, args.seconds * 0.8)
    await down
    refused_down = sum(1 for call in fake.calls if not call.ok)

    async def every_card_posted() -> bool | None:
        approvals = await bot.store.list_approvals(limit=10_000)
        return (len(approvals) == args.runs and all(a.slack_ts for a in approvals)) or None

    card_delay = await wait_until("the last card posted after Slack came back", every_card_posted)
    second = asyncio.create_task(
        outage(
            fake, seconds=SECOND_OUTAGE_SECONDS, flip_seconds=SECOND_OUTAGE_SECONDS, limited=False
        )
    )  # 5xx throughout
    await asyncio.sleep(0)  # it is down before the first decision
    await asyncio.gather(
        *(
            bot.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
            for approval in await bot.store.list_approvals(limit=10_000)
        )
    )
    await second

    async def every_answer_posted() -> bool | None:
        return len(answers(fake)) >= args.runs or None

    await wait_until("every answer posted after the second outage", every_answer_posted)
    await bot.settle()
    return report(bot, fake, args, refused_down=refused_down, card_delay=card_delay)


def answers(fake: FakeSlack) -> list[Call]:
    return [c for c in fake.calls_to("chat.postMessage") if c.ok and "Deployed" in c.text]


def report(
    bot: Bot, fake: FakeSlack, args: argparse.Namespace, *, refused_down: int, card_delay: float
) -> int:
    posted = [call for call in fake.calls_to("chat.postMessage") if call.ok]
    roots = Counter(c.args["text"] for c in posted if "thread_ts" not in c.args)
    cards = [call for call in card_calls(fake) if call.ok]
    per_thread = Counter(call.args.get("thread_ts") for call in cards)
    answered = Counter(call.args.get("thread_ts") for call in answers(fake))
    updates = [call for call in fake.calls_to("chat.update") if call.ok]
    refused = sum(1 for call in fake.calls if not call.ok)
    figures = {
        "runs": args.runs,
        "calls Slack refused (first outage)": refused_down,
        "calls Slack refused (both outages)": refused,
        "roots posted": sum(roots.values()),
        "runs with exactly one root": sum(1 for n in roots.values() if n == 1),
        "cards posted": len(cards),
        "threads with exactly one card": sum(1 for n in per_thread.values() if n == 1),
        "cards updated after the decision": len({c.args["ts"] for c in updates}),
        "answers posted": sum(answered.values()),
        "deploys applied": len(bot.effects.deploys),
        "last card after Slack came back (s)": round(card_delay, 1),
    }
    for name, value in figures.items():
        print(f"  {name}: {value}")
    exact = args.runs
    kept = (
        figures["runs with exactly one root"] == exact
        and figures["threads with exactly one card"] == exact
        and len(cards) == exact
        and figures["answers posted"] == exact
        and figures["deploys applied"] == exact
    )
    print("PASS: nothing lost, nothing posted twice" if kept else "FAIL: something lost or doubled")
    return 0 if kept else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--flip-seconds", type=float, default=5.0)
    return asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
