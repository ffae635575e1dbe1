"""Bulk decisions end to end: calls selected in App Home, one reason in the modal, each
call decided through the real server (signed requests into the Bolt app), the real
service and store, with the fake Slack refusing what Slack would (Block Kit limits of
Home, modals and options). Each call is checked and audited on its own; a call that
fails a check is reported and the others go on."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.slack import bulk_interactions
from store.crypto import KeyRing
from tests.slack.fake_slack import APP_ID, TEAM_ID, Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    CHANNEL_MEMBERS,
    OTHER_APPROVER,
    REQUESTER,
    Bot,
    FakeClock,
    card_calls,
    sqlite_file,
    start_bot,
    stop_bot,
)
from tests.slack.test_decision_commit import write_lock

ELSEWHERE = "C0ELSEWHERE"  # a second channel the approver is a member of, until they leave


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def bot(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> AsyncIterator[Bot]:
    fake_slack.channel_members[ELSEWHERE] = list(CHANNEL_MEMBERS)
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, clock=clock
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


async def ask(
    bot: Bot, count: int, text: str = "deploy payments 1.2.3", *, channel: str = CHANNEL
) -> None:
    """`count` runs of `text` in `channel`; returns once every card is posted."""
    before = len(card_calls(bot.fake))
    for _ in range(count):
        reply = await bot.driver.command("/agent", text, user=REQUESTER, channel=channel)
        assert reply.status == 200
    await bot.fake.wait_for(
        "chat.postMessage", lambda c: c in card_calls(bot.fake), count=before + count
    )


async def open_home(bot: Bot, user: str) -> Call:
    before = len(bot.fake.calls_to("views.publish"))
    await bot.driver.event({"type": "app_home_opened", "user": user, "tab": "home"})
    published = await bot.fake.wait_for("views.publish", count=before + 1)
    assert published[-1].ok, published[-1].answer
    return published[-1]


@dataclass(frozen=True)
class Group:
    """One tool's part of "Decide several at once": its checkboxes (input blocks of at
    most 10 options each) and the actions block with its two buttons."""

    inputs: list[Mapping[str, Any]]
    actions: Mapping[str, Any]

    def options(self) -> list[Mapping[str, Any]]:
        return [option for block in self.inputs for option in block["element"]["options"]]

    def ids(self) -> list[str]:
        return [option["value"] for option in self.options()]


def bulk_group(home: Call, tool_name: str) -> Group:
    blocks = home.args["view"]["blocks"]
    (actions,) = [
        block
        for block in blocks
        if block["type"] == "actions"
        and block.get("block_id", "").startswith("bulk:")
        and {e["value"] for e in block["elements"]} == {tool_name}
    ]
    prefix = f"{actions['block_id']}:"
    inputs = [b for b in blocks if b["type"] == "input" and b["block_id"].startswith(prefix)]
    assert all(b["element"]["type"] == "checkboxes" for b in inputs)
    return Group(inputs=inputs, actions=actions)


def press(
    bot: Bot, home: Call, group: Group, label: str, *, user: str, ticked: list[str]
) -> dict[str, Any]:
    """The block_actions payload Slack sends for `label` pressed in a Home view in which
    `ticked` calls were ticked: every input block's state goes along, as in Slack."""
    values: dict[str, Any] = {}
    for block in home.args["view"]["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        chosen = [o for o in element["options"] if o["value"] in ticked]
        values[block["block_id"]] = {
            element["action_id"]: {"type": "checkboxes", "selected_options": chosen}
        }
    button = next(e for e in group.actions["elements"] if e["text"]["text"] == label)
    view = {
        "id": "VHOME0001",
        "type": "home",
        "blocks": home.args["view"]["blocks"],
        "state": {"values": values},
    }
    return {
        "type": "block_actions",
        "team": {"id": TEAM_ID},
        "user": {"id": user, "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "trigger_id": f"trigger.bulk.{time.monotonic_ns()}",
        "container": {"type": "view", "view_id": "VHOME0001"},
        "view": view,
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": group.actions["block_id"],
                "value": button["value"],
                "action_ts": str(time.time()),
            }
        ],
    }


async def bulk_modal(bot: Bot, payload: dict[str, Any]) -> dict[str, Any]:
    before = len(bot.fake.calls_to("views.open"))
    reply = await bot.driver.interactive(payload)
    assert (reply.status, reply.text) == (200, "")
    opened = await bot.fake.wait_for("views.open", count=before + 1)
    assert opened[-1].ok, opened[-1].answer
    view: dict[str, Any] = opened[-1].args["view"]
    return view


async def audit(bot: Bot, kind: str) -> list[Any]:
    return [event for event in await bot.store.audit_events() if event.kind == kind]


async def test_bulk_approval_of_twenty_calls_makes_twenty_audited_decisions(bot: Bot) -> None:
    await ask(bot, 20)
    await bot.settle()
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "deploy_release")
    ids = group.ids()
    assert len(ids) == 20
    for option in group.options():  # the call's redacted arguments, its id and wait
        assert option["text"]["text"] == '{"service": "payments", "version": "1.2.3"}'
        assert option["description"]["text"] == f"{option['value']} · waiting 0 s"
    # Block Kit: at most 10 options in one checkboxes element
    assert [len(b["element"]["options"]) for b in group.inputs] == [10, 10]

    modal = await bulk_modal(
        bot, press(bot, home, group, "Approve selected…", user=APPROVER, ticked=ids)
    )
    shown = json.dumps(modal["blocks"])
    pending = {a.approval_id: a for a in await bot.store.list_approvals(limit=100)}
    for approval_id in ids:  # each call shown whole, with its digest, before it is approved
        assert approval_id in shown
        assert pending[approval_id].arguments_digest in shown
    assert shown.count("payments") >= 20
    reply = await bot.driver.submit(modal, user=APPROVER, reason="release train CR-77")
    assert reply.status == 200
    answer = reply.json()
    assert answer["response_action"] == "update"
    assert "20 of 20 calls of `deploy_release` approved" in json.dumps(answer["view"])
    await bot.settle()

    decided = await audit(bot, "decided")
    assert sorted(event.approval_id for event in decided) == sorted(ids)
    for event in decided:
        assert event.actor == APPROVER
        assert event.detail["reason"] == "release train CR-77"
        assert event.detail["via"] == "slack-bulk"
    approvals = await bot.store.list_approvals(status="approved", limit=100)
    assert sorted(a.approval_id for a in approvals) == sorted(ids)
    assert len(bot.effects.deploys) == 20  # each call ran, once
    updated = {c.args["ts"] for c in bot.fake.calls_to("chat.update") if "Approved" in c.text}
    assert {card.answer["ts"] for card in card_calls(bot.fake)} <= updated
    refreshed = await bot.fake.wait_for(
        "views.publish", lambda c: c.args["user_id"] == APPROVER, count=2
    )
    assert "Nothing waits for your decision" in json.dumps(refreshed[-1].args["view"])


async def test_a_call_the_approver_may_not_decide_is_reported_and_the_others_decided(
    bot: Bot, clock: FakeClock
) -> None:
    await ask(bot, 3)
    await ask(bot, 1, channel=ELSEWHERE)
    await bot.settle()
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "deploy_release")
    ids = group.ids()
    runs = {a.approval_id: a for a in await bot.store.list_approvals(status="pending", limit=10)}
    (elsewhere,) = [i for i in ids if runs[i].slack_channel == ELSEWHERE]
    first, second, third = [i for i in ids if i != elsewhere]

    # Decided by someone else between Home and the click: left out of the modal, said why.
    await bot.service.decide(third, approve=True, decider=OTHER_APPROVER, reason="mine")
    modal = await bulk_modal(
        bot, press(bot, home, group, "Approve selected…", user=APPROVER, ticked=ids)
    )
    shown = json.dumps(modal["blocks"])
    assert "Not included" in shown
    assert "already approved" in shown
    assert json.loads(modal["private_metadata"])["calls"] == [
        [approval_id, runs[approval_id].arguments_digest]
        for approval_id in ids
        if approval_id != third
    ]

    # The approver leaves the other channel while the modal is open.
    bot.fake.channel_members[ELSEWHERE].remove(APPROVER)
    clock.advance(timedelta(seconds=61))  # past the membership cache
    reply = await bot.driver.submit(modal, user=APPROVER, reason="CR-78")
    assert reply.status == 200
    summary = json.dumps(reply.json()["view"])
    assert "2 of 3 calls of `deploy_release` approved" in summary
    assert "Not decided (1)" in summary
    assert elsewhere in summary
    assert "not a member of the channel" in summary
    await bot.settle()

    statuses = {a.approval_id: a.status for a in await bot.store.list_approvals(limit=10)}
    assert statuses == {
        first: "approved",
        second: "approved",
        third: "approved",
        elsewhere: "pending",
    }
    decided = {(e.approval_id, e.actor) for e in await audit(bot, "decided")}
    assert decided == {(first, APPROVER), (second, APPROVER), (third, OTHER_APPROVER)}
    [refused] = await audit(bot, "refused")
    assert (refused.approval_id, refused.actor) == (elsewhere, APPROVER)
    assert refused.detail["why"] == "not_a_channel_member"
    assert len(bot.effects.deploys) == 3


async def test_bulk_reject_tells_the_agent_and_the_requester_cannot_select_their_own(
    bot: Bot,
) -> None:
    await ask(bot, 2)
    await bot.settle()
    mine = await open_home(bot, REQUESTER)
    assert "bulk:" not in json.dumps(mine.args["view"])  # nothing of theirs to decide
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "deploy_release")
    ids = group.ids()
    modal = await bulk_modal(
        bot, press(bot, home, group, "Reject selected…", user=APPROVER, ticked=ids)
    )
    reply = await bot.driver.submit(modal, user=APPROVER, reason="freeze", message="not today")
    assert "2 of 2 calls of `deploy_release` rejected" in json.dumps(reply.json()["view"])
    await bot.settle()
    rejected = await bot.store.list_approvals(status="rejected", limit=10)
    assert sorted(a.approval_id for a in rejected) == sorted(ids)
    assert {a.message for a in rejected} == {"not today"}
    assert bot.effects.deploys == []


async def test_nothing_ticked_is_told_and_changes_nothing(bot: Bot) -> None:
    await ask(bot, 2)
    await bot.settle()
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "deploy_release")
    notice = await bulk_modal(
        bot, press(bot, home, group, "Approve selected…", user=APPROVER, ticked=[])
    )
    assert "Tick the calls to decide first" in json.dumps(notice)
    assert await audit(bot, "voted") == []
    assert len(await bot.store.list_approvals(status="pending", limit=10)) == 2


async def test_home_with_many_calls_of_many_tools_stays_within_block_kit(bot: Bot) -> None:
    await ask(bot, 35)
    await ask(bot, 12, "@restarter restart payments")
    await bot.settle()
    home = await open_home(bot, APPROVER)  # the fake refuses a view past Block Kit's limits
    blocks = home.args["view"]["blocks"]
    assert len(blocks) <= 100
    deploys = bulk_group(home, "deploy_release")
    assert len(deploys.ids()) == 30  # at most BULK_LIMIT per tool, the oldest
    assert "35 calls wait for you (the oldest 30 below)" in json.dumps(blocks)


async def test_a_database_too_slow_for_the_answer_says_so_then_shows_the_summary(
    bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_interactions, "SUBMISSION_BUDGET_SECONDS", 0.2)
    await ask(bot, 3)
    await bot.settle()
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "deploy_release")
    modal = await bulk_modal(
        bot, press(bot, home, group, "Approve selected…", user=APPROVER, ticked=group.ids())
    )
    modal_id = bot.fake.calls_to("views.open")[-1].answer["view"]["id"]
    payload = bot.driver.submission_payload(modal, user=APPROVER, reason="CR-79")
    payload["view"]["id"] = modal_id  # Slack sends the open modal's own id
    with write_lock(sqlite_file(bot.store)):
        reply = await bot.driver.interactive(payload)
        answer = reply.json()
        assert answer["response_action"] == "update"
        assert "Recording your decisions" in json.dumps(answer["view"])
        assert len(await bot.store.list_approvals(status="pending", limit=10)) == 3
    # The lock is gone: the votes that waited land, and the modal shows what happened.
    (summary,) = await bot.fake.wait_for(
        "views.update",
        lambda c: c.args["view_id"] == modal_id and "3 of 3" in json.dumps(c.args["view"]),
    )
    assert summary.ok
    await bot.settle()
    assert len(await bot.store.list_approvals(status="approved", limit=10)) == 3
    assert len(bot.effects.deploys) == 3


async def test_the_modal_of_thirty_long_hostile_calls_stays_within_block_kit(bot: Bot) -> None:
    await ask(bot, 30, "@echo say it")
    await bot.settle()
    home = await open_home(bot, APPROVER)
    group = bulk_group(home, "echo")
    assert len(group.ids()) == 30
    for option in group.options():  # one line, cut visibly, never Slack markup
        assert len(option["text"]["text"]) <= 75
        assert option["text"]["text"].endswith("…")
    modal = await bulk_modal(  # the fake refuses a modal past Block Kit's limits
        bot, press(bot, home, group, "Reject selected…", user=APPROVER, ticked=group.ids())
    )
    assert len(modal["blocks"]) <= 100
    assert len(modal["private_metadata"]) <= 3000
    assert len(json.loads(modal["private_metadata"])["calls"]) == 30
    shown = json.dumps(modal["blocks"])
    assert "<!channel>" not in shown  # escaped as on the card
    assert "&lt;!channel&gt;" in shown
