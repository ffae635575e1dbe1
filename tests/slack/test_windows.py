"""End to end: approval windows ("approve matching calls for the next 2 h") through the
real server, Bolt app and slack_sdk against the fake Slack, on an injected clock. A
window opened from the approve modal covers a later call of its tool with the same
`service`, in another run, with its own card that says whose window approved it and
until when; never a call with another service, a call too long for its card (nobody
read it), a call the policy now wants two approvals for, or anything after it expired
or was ended from App Home."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.policy.loading import parse_policy
from bot.runtime import Agent, AgentRegistry, ScriptedModel
from bot.slack.decision_modal import WINDOW_ACTION_ID, WINDOW_BLOCK_ID, WINDOW_VALUE
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.governance_harness import card_update, clock, told
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    OTHER_APPROVER,
    REQUESTER,
    Bot,
    Effects,
    FakeClock,
    build_registry,
    buttons_of,
    card_calls,
    in_thread,
    labels,
    open_modal,
    sqlite_file,
    start_bot,
    stop_bot,
)
from tests.store.store_helpers import raw

__all__ = ["clock"]

POLICY = """
[tools.deploy_release]
allow_window = "2h"
window_match = ["service"]
"""
QUORUM_POLICY = """
[tools.deploy_release]
approvers = ["S0RELEASE"]
required_approvals = 2
"""
LONG_VERSION = "1." + "9" * 4000  # far past what a card shows


def agents(effects: Effects) -> tuple[AgentRegistry, dict[str, ScriptedModel]]:
    """The harness's agents, and three more that deploy: ledger, payments again with
    another version, and payments with a version too long for a card."""
    registry, models = build_registry(effects)
    ops = registry.latest("ops")
    assert isinstance(ops, Agent)
    deploy = ops.tool_named("deploy_release")
    assert deploy is not None
    scripts = {
        "ledger": ("ledger", "9.9.9"),
        "again": ("payments", "1.2.4"),
        "long": ("payments", LONG_VERSION),
    }
    extra = {}
    for name, (service, version) in scripts.items():
        extra[name] = ScriptedModel(
            [[("deploy_release", {"service": service, "version": version})], "Deployed."]
        )
    for name, model in extra.items():
        registry.register(Agent(name=name, instructions="Deploy.", tools=[deploy], model=model))
    return registry, {**models, **extra}


@asynccontextmanager
async def windowed(
    fake: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock, policy: str = POLICY
) -> AsyncIterator[Bot]:
    fake.usergroups["S0RELEASE"] = [APPROVER, OTHER_APPROVER]
    bot, runner, session = await start_bot(
        fake, tmp_path / "approvals.db", keyring, clock=clock, agents=agents,
        policy=parse_policy(policy, source="windows.toml"),
    )  # fmt: skip
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


async def ask(bot: Bot, task: str) -> tuple[Call, Call]:
    """/agent <task> as the requester: the run's root message and its one card."""
    before = {id(c) for c in card_calls(bot.fake)}
    roots_before = len(_roots(bot.fake))
    reply = await bot.driver.command("/agent", task, user=REQUESTER, channel=CHANNEL)
    assert (reply.status, reply.text) == (200, "")
    roots = await bot.fake.wait_for("chat.postMessage", lambda c: c in _roots(bot.fake),
                                    count=roots_before + 1)  # fmt: skip
    root = roots[-1]
    (card,) = await bot.fake.wait_for(
        "chat.postMessage",
        lambda c: id(c) not in before and c.args.get("thread_ts") == root.answer["ts"]
        and c in card_calls(bot.fake),
    )  # fmt: skip
    return root, card


def _roots(fake: FakeSlack) -> list[Call]:
    return [c for c in fake.calls_to("chat.postMessage") if "thread_ts" not in c.args and c.ok]


def ticked(payload: dict[str, Any]) -> dict[str, Any]:
    """The approve modal's submission with the approval window ticked, as Slack sends it."""
    payload["view"]["state"]["values"][WINDOW_BLOCK_ID] = {
        WINDOW_ACTION_ID: {
            "type": "checkboxes",
            "selected_options": [{"value": WINDOW_VALUE, "text": {"type": "plain_text"}}],
        }
    }
    return payload


async def open_window(bot: Bot, card: Call, user: str = APPROVER) -> dict[str, Any]:
    """Approve `card` with the window ticked; the modal it was done in."""
    view = await open_modal(bot, card, "Approve", user=user)
    payload = bot.driver.submission_payload(view, user=user, reason="release day")
    reply = await bot.driver.interactive(ticked(payload))
    assert (reply.status, reply.text) == (200, "")
    await bot.fake.wait_for("chat.update", card_update(card, "Opened an approval window"))
    return view


async def test_a_window_covers_the_next_matching_call_and_not_another_service(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        first_root, first = await ask(bot, "deploy payments 1.2.3")
        view = await open_window(bot, first)
        assert labels(view) == ["Reason", "Approval window (2h)"]
        await bot.fake.wait_for("chat.postMessage", in_thread(first_root, "Deployed payments"))

        # A later run, the same service: approved at once in Alice's name, said on its card.
        clock.advance(timedelta(minutes=30))
        root, second = await ask(bot, "@again deploy")
        (covered,) = await bot.fake.wait_for("chat.update", card_update(second, "Approved"))
        assert f"Approved by the approval window <@{APPROVER}> opened" in covered.text
        assert "open until <!date^" in covered.text
        assert "with the same service" in covered.text
        await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed."))

        # Another service: asked as usual, and still waiting.
        _, ledger = await ask(bot, "@ledger deploy")
        await bot.settle()
        assert buttons_of(ledger)[:1] == ["Approve"]
        assert not [c for c in bot.fake.calls_to("chat.update") if c.args["ts"] ==
                    ledger.answer["ts"]]  # fmt: skip
        assert [d[:2] for d in bot.effects.deploys] == [
            ("payments", "1.2.3"),
            ("payments", "1.2.4"),
        ]

        # Expired (on the injected clock): the next matching call waits for a person.
        clock.advance(timedelta(hours=1, minutes=31))
        _, late = await ask(bot, "@again deploy")
        await bot.settle()
        assert not [c for c in bot.fake.calls_to("chat.update") if c.args["ts"] ==
                    late.answer["ts"]]  # fmt: skip
        trail = await bot.store.audit_events()
        opened = [e for e in trail if e.kind == "window_opened"]
        assert [(e.actor, e.detail["match_fields"]) for e in opened] == [(APPROVER, ["service"])]
        decided = [e for e in trail if e.kind == "decided" and e.detail.get("via") == "window"]
        assert [e.actor for e in decided] == [APPROVER]
        assert "payments" not in json.dumps([e.detail for e in opened])  # values stay out


async def test_a_window_never_covers_a_call_too_long_for_its_card(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        _, first = await ask(bot, "deploy payments 1.2.3")
        await open_window(bot, first)
        _, long = await ask(bot, "@long deploy")
        await bot.settle()
        assert "Read all arguments" in buttons_of(long)
        record = await bot.store.get_approval(long.args["blocks"][-1]["elements"][0]["value"])
        assert record is not None
        assert record.status == "pending"
        assert [d[1] for d in bot.effects.deploys] == ["1.2.3"]


async def test_a_window_does_not_cover_a_tool_that_now_needs_two_approvals(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        _, first = await ask(bot, "deploy payments 1.2.3")
        await open_window(bot, first)
        await bot.settle()
    fake_slack.calls.clear()
    async with windowed(fake_slack, tmp_path, keyring, clock, QUORUM_POLICY) as bot:
        assert len(await bot.store.all_open_windows(at=clock())) == 1  # still open in the store
        _, second = await ask(bot, "@again deploy")
        await bot.settle()
        assert "0 of 2 approvals" in second.text
        record = await bot.store.get_approval(second.args["blocks"][-1]["elements"][0]["value"])
        assert record is not None
        assert record.status == "pending"


async def test_ending_a_window_from_app_home_stops_it(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        _, first = await ask(bot, "deploy payments 1.2.3")
        await open_window(bot, first)
        await bot.settle()
        await bot.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
        (home,) = await bot.fake.wait_for("views.publish")
        text = json.dumps(home.args["view"])
        assert "Your approval windows" in text
        assert "End window" in text

        # Someone else's click on it (a shared link): refused by DM, nothing ends.
        await bot.driver.interactive(_end_click(bot, home, user=OTHER_APPROVER))
        dm = bot.fake.dm_channel(OTHER_APPROVER)
        await bot.fake.wait_for(
            "chat.postMessage",
            lambda c: c.args.get("channel") == dm and "only who opened" in c.text,
        )
        assert len(await bot.store.all_open_windows(at=clock())) == 1

        await bot.driver.interactive(_end_click(bot, home, user=APPROVER))
        republished = await bot.fake.wait_for(
            "views.publish", lambda c: c.args["user_id"] == APPROVER, count=2
        )
        assert "Your approval windows" not in json.dumps(republished[-1].args["view"])
        await bot.fake.wait_for("chat.update", lambda c: c.args["ts"] == first.answer["ts"]
                                and "Opened an approval window" not in c.text)  # fmt: skip

        _, second = await ask(bot, "@again deploy")
        await bot.settle()
        record = await bot.store.get_approval(second.args["blocks"][-1]["elements"][0]["value"])
        assert record is not None
        assert record.status == "pending"
        kinds = [(e.kind, e.actor) for e in await bot.store.audit_events()
                 if e.kind in ("window_revoked", "refused")]  # fmt: skip
        assert kinds == [("refused", OTHER_APPROVER), ("window_revoked", APPROVER)]


async def test_the_window_is_offered_only_to_approve_where_the_policy_allows(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        _, card = await ask(bot, "deploy payments 1.2.3")
        rejecting = await open_modal(bot, card, "Reject", user=APPROVER)
        assert "Approval window (2h)" not in labels(rejecting)
    (tmp_path / "other").mkdir()
    async with windowed(fake_slack, tmp_path / "other", keyring, clock, "") as bot:
        _, card = await ask(bot, "deploy payments 1.2.3")
        view = await open_modal(bot, card, "Approve", user=APPROVER)
        assert labels(view) == ["Reason"]
        # A forged submission ticking it anyway is refused and changes nothing.
        payload = bot.driver.submission_payload(view, user=APPROVER, reason="sneaky")
        await bot.driver.interactive(ticked(payload))
        await bot.fake.wait_for("chat.postEphemeral", told(APPROVER, "allow_window"))
        await bot.settle()
        assert await bot.store.all_open_windows(at=clock()) == []


def _end_click(bot: Bot, home: Call, *, user: str) -> dict[str, Any]:
    """A block_actions payload for pressing End window in a published App Home view."""
    button = next(
        b["accessory"] for b in home.args["view"]["blocks"]
        if b.get("accessory", {}).get("action_id") == "window_end"
    )  # fmt: skip
    payload = bot.driver.view_click_payload(
        {"id": "VHOME0001", "blocks": [{"type": "actions", "elements": [button]}]},
        "End window",
        user=user,
    )
    payload["view"] = {"id": "VHOME0001", "type": "home"}
    return payload


async def test_a_window_extended_in_the_database_covers_nothing(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    async with windowed(fake_slack, tmp_path, keyring, clock) as bot:
        _, first = await ask(bot, "deploy payments 1.2.3")
        await open_window(bot, first)
        await bot.settle()
        with raw(sqlite_file(bot.store)) as connection:  # a writer without the keys
            connection.execute(
                "UPDATE approval_windows SET expires_at = '2099-01-01T00:00:00.000000Z'"
            )
        clock.advance(timedelta(hours=3))
        _, second = await ask(bot, "@again deploy")
        await bot.settle()
        record = await bot.store.get_approval(second.args["blocks"][-1]["elements"][0]["value"])
        assert record is not None
        assert record.status == "pending"
        tampered = [e.detail for e in await bot.store.audit_events() if e.kind == "tamper_detected"]
        assert [d["purpose"] for d in tampered] == ["window_seal"]
