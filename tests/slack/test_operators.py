"""Operators in Slack: an uncertain call reconciled from its card or by command, the
`/approvals` read commands, App Home, and the reminder in the thread."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from bot.slack.modals import decode_modal_context
from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, Call, FakeSlack
from tests.slack.governance_harness import (
    ADMIN,
    OUTSIDER,
    RELEASE_GROUP,
    approval_id_of,
    card_update,
    clock,
    governance_policy,
    governed,
    told,
    vote,
)
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    OTHER_APPROVER,
    REQUESTER,
    Bot,
    FakeClock,
    buttons_of,
    in_thread,
    open_modal,
    start_bot,
    start_run,
    stop_bot,
)

__all__ = ["clock", "governed"]


async def _uncertain_card(
    fake: FakeSlack, database: Path, keyring: KeyRing, clock: FakeClock
) -> tuple[Bot, object, object, Call, Call]:
    """Approve a manual tool, 'kill' the process inside it, restart: the new process
    posts the uncertain call's card. Returns the second bot (and its server parts),
    the run's root message and the uncertain card."""
    fake.usergroups[RELEASE_GROUP] = [APPROVER, OTHER_APPROVER]
    policy = governance_policy()
    first, runner, session = await start_bot(fake, database, keyring, policy=policy, clock=clock)
    first.effects.hang = True
    try:
        root, (card,) = await start_run(first, "@restarter restart payments")
        await vote(first, card, APPROVER)
        await asyncio.wait_for(first.effects.applied.wait(), 10)
    finally:
        await stop_bot(first, runner, session, drain_seconds=0)
    second, runner, session = await start_bot(fake, database, keyring, policy=policy, clock=clock)
    assert await second.service.recover() == 1
    (uncertain,) = await fake.wait_for("chat.postMessage", in_thread(root, "Outcome unknown"))
    assert buttons_of(uncertain) == ["Record result", "Retry", "Abort"]
    return second, runner, session, root, uncertain


async def test_record_a_verified_result_from_the_uncertain_card(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    bot, runner, session, root, uncertain = await _uncertain_card(
        fake_slack, tmp_path / "a.db", keyring, clock
    )
    try:
        await bot.driver.click(uncertain, "Retry", user=OUTSIDER, ts=uncertain.answer["ts"])
        (form,) = await fake_slack.wait_for(
            "views.open", lambda c: c.args["view"]["callback_id"] == "uncertain_reconcile"
        )
        assert "`restart_service`" in form.args["view"]["blocks"][0]["text"]["text"]
        await bot.driver.submit(form.args["view"], user=OUTSIDER, reason="let me")
        await fake_slack.wait_for("chat.postEphemeral", told(OUTSIDER, ":no_entry:"))

        view = await open_modal(bot, uncertain, "Record result", user=APPROVER)
        assert "`restart_service`" in view["blocks"][0]["text"]["text"]  # named by the service
        assert [b["label"]["text"] for b in view["blocks"] if b["type"] == "input"] == [
            "Verified result",
            "Reason",
        ]
        missing = await bot.driver.submit(view, user=APPROVER, reason="checked", message=None)
        assert set(missing.json()["errors"]) == {"verified_result"}
        await bot.driver.submit(
            view, user=APPROVER, reason="checked the host", message="restarted at 10:02"
        )
        await fake_slack.wait_for("chat.postMessage", in_thread(root, "Restarted."))
        await bot.settle()
        assert bot.effects.restarts == []  # never run again
        history = json.dumps(bot.models["restarter"].requests[-1].history)
        assert "restarted at 10:02" in history
        events = await bot.service.store.audit_events(run_id=None)
        (reconciled,) = [e for e in events if e.kind == "reconciled"]
        assert reconciled.actor == APPROVER

        late = await open_modal(bot, uncertain, "Abort", user=APPROVER)  # settled meanwhile
        assert "`the call`" in late["blocks"][0]["text"]["text"]
        await bot.driver.submit(late, user=APPROVER, reason="too late")
        await fake_slack.wait_for("chat.postEphemeral", told(APPROVER, "is completed"))
    finally:
        await stop_bot(bot, runner, session)  # type: ignore[arg-type]


async def test_reconcile_abort_by_command(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, clock: FakeClock
) -> None:
    bot, runner, session, root, _ = await _uncertain_card(
        fake_slack, tmp_path / "a.db", keyring, clock
    )
    try:
        (card,) = [
            c for c in fake_slack.calls_to("chat.postMessage") if "Approval needed" in c.text
        ]
        approval_id = approval_id_of(card)
        await bot.driver.command(
            "/approvals", f"reconcile {approval_id} maybe", user=ADMIN, channel=CHANNEL
        )
        await bot.driver.command(
            "/approvals", "reconcile nosuch abort", user=ADMIN, channel=CHANNEL
        )
        await bot.driver.command(
            "/approvals", f"reconcile {approval_id} abort", user=ADMIN, channel=CHANNEL
        )
        answers = await fake_slack.wait_for(RESPONSE_URL, count=2)
        texts = sorted(a.text for a in answers)
        assert any("no approval or run with id 'nosuch'" in t for t in texts)
        assert any("Reconciled" in t for t in texts)
        await fake_slack.wait_for("chat.postMessage", in_thread(root, "Restarted."))
        await bot.settle()
        assert bot.effects.restarts == []
        history = json.dumps(bot.models["restarter"].requests[-1].history)
        assert "unknown" in history.lower()
    finally:
        await stop_bot(bot, runner, session)  # type: ignore[arg-type]


async def test_list_show_and_audit(governed: Bot) -> None:
    _, (card,) = await start_run(governed)
    approval_id = approval_id_of(card)
    await governed.settle()

    async def ask(text: str, user: str) -> str:
        before = len(governed.fake.calls_to(RESPONSE_URL))
        reply = await governed.driver.command("/approvals", text, user=user, channel=CHANNEL)
        assert (reply.status, reply.text) == (200, "")
        answers = await governed.fake.wait_for(RESPONSE_URL, count=before + 1)
        assert answers[-1].args["response_type"] == "ephemeral"
        return answers[-1].text

    listed = await ask("list", APPROVER)
    assert approval_id in listed
    assert "0 of 2 approvals" in listed
    assert "Nothing waits" in await ask("list", OUTSIDER)
    assert "Nothing waits" in await ask("list", REQUESTER)
    assert "There is no page 2" in await ask("list 2", APPROVER)

    shown = await ask(f"show {approval_id}", APPROVER)
    assert "You may decide, revoke" in shown
    assert RELEASE_GROUP in shown
    assert "not an approver" in await ask(f"show {approval_id}", OUTSIDER)
    assert "no approval with id 'nosuch'" in await ask("show nosuch", APPROVER)

    await vote(governed, card, APPROVER, reason="ok by me")
    await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    await governed.settle()
    trail = await ask(f"audit {approval_id}", APPROVER)
    assert "*requested*" in trail
    assert f"*voted* <@{APPROVER}>" in trail
    assert "ok by me" in trail


async def test_bad_approvals_syntax_is_answered_with_the_help_at_once(governed: Bot) -> None:
    reply = await governed.driver.command(
        "/approvals", "reconcile ap_1 maybe", user=APPROVER, channel=CHANNEL
    )
    assert reply.status == 200
    assert "reconcile needs `result &lt;text&gt;`, `retry` or `abort`" in reply.text
    assert "/approvals list [page]" in reply.text


async def test_app_home_shows_waiting_requested_and_recent(governed: Bot) -> None:
    _, (card,) = await start_run(governed)
    approval_id = approval_id_of(card)
    await governed.settle()
    await governed.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    (published,) = await governed.fake.wait_for("views.publish")
    assert published.args["user_id"] == APPROVER
    view = published.args["view"]
    assert view["type"] == "home"
    assert len(view["blocks"]) <= 100
    headers = [b["text"]["text"] for b in view["blocks"] if b["type"] == "header"]
    assert headers == ["Waiting for you", "You requested", "Recent decisions"]
    (actions,) = [b for b in view["blocks"] if b["type"] == "actions"]
    assert [e["text"]["text"] for e in actions["elements"]] == [
        "Approve",
        "Approve with changes",
        "Reject",
        "Revoke",
    ]
    assert {e["value"] for e in actions["elements"]} == {approval_id}

    await governed.driver.event({"type": "app_home_opened", "user": REQUESTER, "tab": "home"})
    mine = await governed.fake.wait_for("views.publish", lambda c: c.args["user_id"] == REQUESTER)
    text = json.dumps(mine[0].args["view"])
    assert "Nothing waits for your decision" in text
    assert approval_id in text  # under "You requested"


async def test_app_home_and_approvals_show_say_how_long_a_call_waits(
    governed: Bot, clock: FakeClock
) -> None:
    _, (card,) = await start_run(governed)
    await governed.settle()
    clock.advance(timedelta(minutes=12, seconds=30))
    await governed.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    (published,) = await governed.fake.wait_for("views.publish")
    contexts = [
        element["text"]
        for block in published.args["view"]["blocks"]
        if block["type"] == "context"
        for element in block["elements"]
    ]
    assert any("waiting 12 min" in text for text in contexts), contexts

    clock.advance(timedelta(minutes=40))
    shown = f"show {approval_id_of(card)}"
    await governed.driver.command("/approvals", shown, user=APPROVER, channel=CHANNEL)
    (answer,) = await governed.fake.wait_for(RESPONSE_URL)
    assert "(waiting 52 min)" in answer.text


async def test_one_reminder_in_the_thread_before_expiry(governed: Bot, clock: FakeClock) -> None:
    root, _ = await start_run(governed)
    clock.advance(timedelta(minutes=51))
    await governed.service.send_reminders()
    await governed.service.send_reminders()
    (reminder,) = await governed.fake.wait_for(
        "chat.postMessage", in_thread(root, "still waits for a decision")
    )
    assert f"<!subteam^{RELEASE_GROUP}>" in reminder.text
    await governed.settle()
    reminders = [c for c in governed.fake.calls_to("chat.postMessage") if "still waits" in c.text]
    assert len(reminders) == 1


def _from_home(bot: Bot, published: Call, label: str, *, user: str) -> dict[str, object]:
    """A block_actions payload for pressing `label` in a published App Home view."""
    as_message = Call(
        method="views.publish",
        args={"channel": "unused", "text": "", "blocks": published.args["view"]["blocks"]},
        token=None,
        answer={},
    )
    payload = bot.driver.click_payload(as_message, label, user=user, ts="0")
    del payload["channel"], payload["message"]
    payload["container"] = {"type": "view", "view_id": "VHOME0001"}
    payload["view"] = {"id": "VHOME0001", "type": "home"}
    return payload


async def test_deciding_from_app_home(governed: Bot) -> None:
    _, (card,) = await start_run(governed)
    await governed.settle()
    await governed.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    (home,) = await governed.fake.wait_for("views.publish")

    # Someone outside the group sees APPROVER's Home buttons (say, a shared screenshot
    # link): the refusal opens as a modal, as there is no channel to answer in.
    await governed.driver.interactive(_from_home(governed, home, "Approve", user=OUTSIDER))
    (notice,) = await governed.fake.wait_for("views.open")
    assert "not an approver" in json.dumps(notice.args["view"])

    await governed.driver.interactive(_from_home(governed, home, "Approve", user=APPROVER))
    opened = await governed.fake.wait_for("views.open", count=2)
    view = opened[-1].args["view"]
    context = decode_modal_context(view["private_metadata"])
    assert context.channel_id is None  # no channel: it came from Home
    await governed.driver.submit(view, user=APPROVER, reason="from home")
    await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    refreshed = await governed.fake.wait_for(
        "views.publish", lambda c: c.args["user_id"] == APPROVER, count=2
    )
    assert "Nothing waits for your decision" in json.dumps(refreshed[-1].args["view"])
