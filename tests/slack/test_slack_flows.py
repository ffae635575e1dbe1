"""End to end through the real HTTP endpoint: /agent -> card -> click -> modal -> decision
-> resume -> answer in the thread; and what must change nothing."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from fake_slack import Call
from slack_harness import (
    APPROVER,
    CHANNEL,
    HOSTILE_TEXT,
    OTHER_APPROVER,
    REQUESTER,
    SECRET_VALUE,
    Bot,
    Effects,
    FakeSlack,
    KeyRing,
    card_calls,
    start_bot,
    stop_bot,
)

from bot.runtime import arguments_digest
from bot.slack.signature import compute_signature


async def start_run(
    bot: Bot, text: str = "deploy payments 1.2.3", *, cards: int = 1
) -> tuple[Call, list[Call]]:
    """/agent <text>; wait for the run's root message and its review cards."""
    reply = await bot.driver.command("/agent", text, user=REQUESTER, channel=CHANNEL)
    assert reply.status == 200
    assert reply.text == ""
    (root,) = await bot.fake.wait_for(
        "chat.postMessage", lambda c: "thread_ts" not in c.args and c.ok
    )
    root_ts = root.answer["ts"]
    found = await bot.fake.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == root_ts and c in card_calls(bot.fake),
        count=cards,
    )
    return root, found


async def open_modal(bot: Bot, card: Call, action: str, *, user: str) -> dict[str, Any]:
    before = len(bot.fake.calls_to("views.open"))
    reply = await bot.driver.click(card, action, user=user, ts=card.answer["ts"])
    assert (reply.status, reply.text) == (200, "")
    calls = await bot.fake.wait_for("views.open", count=before + 1)
    view: dict[str, Any] = calls[-1].args["view"]
    return view


def labels(view: dict[str, Any]) -> list[str]:
    return [block["label"]["text"] for block in view["blocks"] if block["type"] == "input"]


def in_thread(root: Call, needle: str):  # type: ignore[no-untyped-def]
    return lambda c: c.args.get("thread_ts") == root.answer["ts"] and needle in c.text


async def test_approve_from_the_card_resumes_and_answers_in_the_thread(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    assert root.args["channel"] == CHANNEL
    assert f"<@{REQUESTER}>" in root.text
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    buttons = [e["text"]["text"] for e in card.args["blocks"][-1]["elements"]]
    assert buttons == ["Approve", "Reject"]
    assert {e["value"] for e in card.args["blocks"][-1]["elements"]} == {approval_id}
    digest = arguments_digest({"service": "payments", "version": "1.2.3"})
    assert digest in card.text
    assert "deploy_release" in card.text
    assert "payments" in card.text

    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert labels(view) == ["Reason"]
    assert digest in json.dumps(view["blocks"])
    reply = await bot.driver.submit(view, user=APPROVER, reason="change ticket CHG-1 <ok>")
    assert (reply.status, reply.text) == (200, "")

    (update,) = await bot.fake.wait_for("chat.update")
    assert update.args["ts"] == card.answer["ts"]
    assert not any(block["type"] == "actions" for block in update.args["blocks"])
    assert f"<@{APPROVER}>" in update.text
    assert "change ticket CHG-1 &lt;ok&gt;" in update.text
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert len(bot.effects.deploys) == 1

    run = await bot.service.store.find_run_by_thread(CHANNEL, root.answer["ts"])
    assert run is not None
    assert run.status == "completed"
    state = await bot.service.load_state(run.run_id)
    (metadata,) = state.approval_metadata.values()
    assert (metadata.approver_id, metadata.reason) == (APPROVER, "change ticket CHG-1 <ok>")
    decided = await bot.service.store.audit_events(approval_id=approval_id)
    assert [(e.kind, e.actor) for e in decided if e.kind == "decided"] == [("decided", APPROVER)]


async def test_reject_with_a_message_to_the_agent(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Reject", user=APPROVER)
    assert labels(view) == ["Reason", "Message to the agent"]
    await bot.driver.submit(
        view, user=APPROVER, reason="freeze week", message="Not during the freeze."
    )
    (update,) = await bot.fake.wait_for("chat.update")
    assert "Rejected" in update.text
    assert "freeze week" in update.text
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert bot.effects.deploys == []
    seen_by_model = json.dumps(bot.models["ops"].requests[-1].history)
    assert "Not during the freeze." in seen_by_model
    assert "freeze week" not in seen_by_model  # the reason is audit only


async def test_two_pending_calls_are_decided_separately(bot: Bot) -> None:
    root, cards = await start_run(bot, "@twin deploy both", cards=2)
    first, second = cards
    view = await open_modal(bot, first, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason="payments is fine")
    await bot.fake.wait_for("chat.update", lambda c: c.args["ts"] == first.answer["ts"])
    await bot.settle()
    assert bot.effects.deploys == []  # nothing runs before every call of the turn is decided

    view = await open_modal(bot, second, "Reject", user=OTHER_APPROVER)
    await bot.driver.submit(view, user=OTHER_APPROVER, reason="ledger is frozen")
    await bot.fake.wait_for("chat.update", lambda c: c.args["ts"] == second.answer["ts"])
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Both calls are settled."))
    await bot.settle()
    assert [(service, version) for service, version, _ in bot.effects.deploys] == [
        ("payments", "1.2.3")
    ]


async def test_double_submission_and_racing_approvers_decide_once(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view_a = await open_modal(bot, card, "Approve", user=APPROVER)
    view_b = await open_modal(bot, card, "Reject", user=OTHER_APPROVER)
    replies = await asyncio.gather(
        bot.driver.submit(view_a, user=APPROVER, reason="go"),
        bot.driver.submit(view_a, user=APPROVER, reason="go"),  # double click on Submit
        bot.driver.submit(view_b, user=OTHER_APPROVER, reason="stop"),
    )
    assert [reply.status for reply in replies] == [200, 200, 200]
    await bot.settle()
    approval_id = view_a["private_metadata"].split("|")[1]
    events = await bot.service.store.audit_events(approval_id=approval_id)
    decided = [event for event in events if event.kind == "decided"]
    assert len(decided) == 1
    winner = decided[0].actor
    told = await bot.fake.wait_for("chat.postEphemeral", count=2)
    assert all("already" in call.text and f"<@{winner}>" in call.text for call in told)
    assert len(bot.fake.calls_to("chat.update")) == 1
    assert len(bot.effects.deploys) == (1 if winner == APPROVER else 0)


async def test_bad_signatures_get_401_and_change_nothing(bot: Bot) -> None:
    body = "command=%2Fagent&text=deploy&user_id=U1&channel_id=C1&trigger_id=t"
    now = str(int(time.time()))
    forged = compute_signature(signing_secret="not-the-secret", timestamp=now, body=body.encode())
    stale = str(int(time.time()) - 600)
    cases = [
        {"timestamp": now, "signature": forged},
        {"sign": False},
        {
            "timestamp": stale,
            "signature": compute_signature(
                signing_secret="8f742231b10e8888abcd99yyyzzz85a5",
                timestamp=stale,
                body=body.encode(),
            ),
        },
        {"timestamp": "17e8", "signature": "v0=" + "0" * 64},
        {"timestamp": "not-a-number", "signature": forged},
    ]
    for case in cases:
        reply = await bot.driver.post(
            body, content_type="application/x-www-form-urlencoded", **case
        )
        assert reply.status == 401, case
    await bot.settle()
    assert bot.fake.calls == []
    assert await bot.service.store.list_runs() == []


async def test_a_slack_retry_is_processed_once(bot: Bot) -> None:
    root_reply = await bot.driver.command("/agent", "@chat hello", user=REQUESTER, channel=CHANNEL)
    assert root_reply.status == 200
    (root,) = await bot.fake.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "First answer."))
    await bot.settle()
    event = {
        "type": "message",
        "channel": CHANNEL,
        "user": REQUESTER,
        "text": "and then?",
        "ts": "1800000000.000900",
        "thread_ts": root.answer["ts"],
    }
    first = await bot.driver.event(event, event_id="Ev0RETRY1")
    again = await bot.driver.event(event, event_id="Ev0RETRY1", retry_num=1)
    assert (first.status, again.status) == (200, 200)
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Second answer."))
    await bot.settle()
    assert (
        len([c for c in bot.fake.calls_to("chat.postMessage") if "Second answer." in c.text]) == 1
    )


async def test_a_secret_argument_is_redacted_on_the_card_but_covered_by_the_digest(
    bot: Bot,
) -> None:
    _, (card,) = await start_run(bot, "@secrets rotate the token")
    assert SECRET_VALUE not in card.text
    assert "redacted" in card.text
    real = {"service": "payments", "key": "slack_token", "value": SECRET_VALUE}
    assert arguments_digest(real) in card.text
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    assert SECRET_VALUE not in record.snapshot
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert SECRET_VALUE not in json.dumps(view)
    await bot.driver.submit(view, user=APPROVER, reason="rotation")
    (update,) = await bot.fake.wait_for("chat.update")
    assert SECRET_VALUE not in update.text
    await bot.settle()
    assert bot.effects.configs == [("slack_token", SECRET_VALUE)]


async def test_a_thread_reply_continues_the_conversation_from_the_stored_state(
    bot: Bot,
) -> None:
    await bot.driver.command("/agent", "@chat hello", user=REQUESTER, channel=CHANNEL)
    (root,) = await bot.fake.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "First answer."))
    await bot.settle()
    reply = {
        "type": "message",
        "channel": CHANNEL,
        "user": APPROVER,
        "text": "tell me more",
        "ts": "1800000000.000500",
        "thread_ts": root.answer["ts"],
    }
    assert (await bot.driver.event(reply)).status == 200
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Second answer."))
    history = bot.models["chat"].requests[-1].history
    assert [item["type"] for item in history] == ["user", "assistant", "user"]
    assert history[-1]["content"] == "tell me more"


async def test_thread_replies_while_paused_are_told_to_wait_and_bot_messages_are_ignored(
    bot: Bot,
) -> None:
    root, _ = await start_run(bot)
    thread_ts = root.answer["ts"]
    paused = {
        "type": "message",
        "channel": CHANNEL,
        "user": REQUESTER,
        "text": "hurry up",
        "ts": "1800000000.000100",
        "thread_ts": thread_ts,
    }
    await bot.driver.event(paused)
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert told.args["user"] == REQUESTER
    assert told.args["thread_ts"] == thread_ts
    assert "paused" in told.text
    own = {**paused, "user": "UBOT0001", "ts": "1800000000.000200", "text": "bot echo"}
    bot_message = {**paused, "bot_id": "B1", "ts": "1800000000.000300"}
    await bot.driver.event(own)
    await bot.driver.event(bot_message)
    await bot.settle()
    assert len(bot.fake.calls_to("chat.postEphemeral")) == 1


async def test_the_requester_may_not_approve_their_own_call(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=REQUESTER)
    reply = await bot.driver.submit(view, user=REQUESTER, reason="trust me")
    assert reply.status == 200
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert told.args["user"] == REQUESTER
    assert "someone else" in told.text
    await bot.settle()
    approval_id = view["private_metadata"].split("|")[1]
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    assert record.status == "pending"
    assert bot.fake.calls_to("chat.update") == []
    assert bot.effects.deploys == []


async def test_a_missing_reason_is_an_inline_error(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    reply = await bot.driver.submit(view, user=APPROVER, reason="   ")
    assert reply.status == 200
    assert reply.json()["response_action"] == "errors"
    assert set(reply.json()["errors"]) == {"reason"}
    await bot.settle()
    assert bot.fake.calls_to("chat.update") == []


async def test_slack_429_is_retried_after_retry_after(bot: Bot) -> None:
    bot.fake.fail("chat.postMessage", times=1, status=429, retry_after=0)
    root, (card,) = await start_run(bot)
    statuses = [call.ok for call in bot.fake.calls_to("chat.postMessage")]
    assert statuses[:2] == [False, True]
    assert root.ok
    assert card.ok


async def test_an_expired_trigger_id_is_explained(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    bot.fake.fail("views.open", error="expired_trigger_id")
    reply = await bot.driver.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    assert reply.status == 200
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert told.args["user"] == APPROVER
    assert "Press the button again" in told.text


async def test_help_and_list_commands(bot: Bot) -> None:
    help_reply = await bot.driver.command("/agent", "help", user=REQUESTER, channel=CHANNEL)
    assert help_reply.status == 200
    assert "/agent @name" in help_reply.text
    await start_run(bot)
    await bot.settle()
    listed = await bot.driver.command("/approvals", "list", user=APPROVER, channel=CHANNEL)
    assert listed.status == 200
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert "deploy_release" in told.text
    assert f"<@{REQUESTER}>" in told.text
    mine = await bot.driver.command("/approvals", "list", user=REQUESTER, channel=CHANNEL)
    assert mine.status == 200
    told_requester = await bot.fake.wait_for("chat.postEphemeral", count=2)
    assert "Nothing waits" in told_requester[1].text


async def test_healthz(bot: Bot) -> None:
    url = bot.driver.url.replace("/slack/events", "/healthz")
    async with bot.driver._session.get(url) as resp:
        assert resp.status == 200


async def test_a_card_still_works_after_the_bot_restarted(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    """The process stops after the pause; a new one, on the same database, takes the
    click on the old card, resumes the run and answers in the same thread."""
    database = tmp_path / "approvals.db"
    first, runner, session = await start_bot(fake_slack, database, keyring)
    try:
        root, (card,) = await start_run(first)
    finally:
        await stop_bot(first, runner, session)
    second, runner, session = await start_bot(fake_slack, database, keyring)
    try:
        assert await second.service.recover() == 0  # a paused run waits; nothing to finish
        view = await open_modal(second, card, "Approve", user=APPROVER)
        await second.driver.submit(view, user=APPROVER, reason="after the restart")
        (update,) = await fake_slack.wait_for("chat.update")
        assert update.args["ts"] == card.answer["ts"]
        await fake_slack.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
        await second.settle()
        assert first.effects.deploys == []
        assert len(second.effects.deploys) == 1
    finally:
        await stop_bot(second, runner, session)


async def test_long_and_hostile_arguments_fit_the_card_escaped(bot: Bot) -> None:
    reply = await bot.driver.command(
        "/agent", f"@echo {HOSTILE_TEXT}", user=REQUESTER, channel=CHANNEL
    )
    assert reply.status == 200
    (card,) = await bot.fake.wait_for("chat.postMessage", lambda c: c in card_calls(bot.fake))
    for block in card.args["blocks"]:
        text = block.get("text", {}).get("text", "")
        assert len(text) <= 3000
        for element in block.get("elements", []):
            assert (
                len(element.get("text", "") if isinstance(element.get("text"), str) else "") <= 2000
            )
    call_block = next(b for b in card.args["blocks"] if b.get("block_id") == "call")
    assert "&lt;!channel&gt; &amp; &lt;@U0BOSS&gt;" in call_block["text"]["text"]
    assert "<!channel>" not in card.text
    assert "truncated" in call_block["text"]["text"] or "…" in call_block["text"]["text"]
    (root,) = [c for c in bot.fake.calls_to("chat.postMessage") if "thread_ts" not in c.args]
    assert "<!channel>" not in root.text


async def _die_inside_the_approved_tool(
    fake_slack: FakeSlack, database: Path, keyring: KeyRing, task: str
) -> tuple[Call, Call, Effects]:
    """/agent task, approve, and 'kill' the process while the tool runs (its effect is
    applied, its result never recorded). Returns the root, the card and the effects."""
    first, runner, session = await start_bot(fake_slack, database, keyring)
    first.effects.hang = True
    try:
        root, (card,) = await start_run(first, task)
        view = await open_modal(first, card, "Approve", user=APPROVER)
        await first.driver.submit(view, user=APPROVER, reason="go")
        await asyncio.wait_for(first.effects.applied.wait(), 10)
    finally:
        await stop_bot(first, runner, session, drain_seconds=0)
    return root, card, first.effects


async def test_killed_inside_an_idempotent_tool_reruns_it_with_the_same_key(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    database = tmp_path / "approvals.db"
    root, _, before = await _die_inside_the_approved_tool(
        fake_slack, database, keyring, "deploy payments 1.2.3"
    )
    second, runner, session = await start_bot(fake_slack, database, keyring)
    try:
        assert await second.service.recover() == 1
        await fake_slack.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
        await second.settle()
        (killed,) = before.deploys
        (again,) = second.effects.deploys
        assert again == killed  # same service, version and execution key
    finally:
        await stop_bot(second, runner, session)


async def test_killed_inside_a_manual_tool_ends_uncertain_and_the_thread_says_so(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    database = tmp_path / "approvals.db"
    root, _, before = await _die_inside_the_approved_tool(
        fake_slack, database, keyring, "@restarter restart payments"
    )
    second, runner, session = await start_bot(fake_slack, database, keyring)
    try:
        assert await second.service.recover() == 1
        (told,) = await fake_slack.wait_for(
            "chat.postMessage", in_thread(root, "may or may not have taken effect")
        )
        assert "restart_service" in told.text
        await second.settle()
        assert len(before.restarts) == 1
        assert second.effects.restarts == []  # never repeated blindly
    finally:
        await stop_bot(second, runner, session)


async def test_app_home_lists_what_waits_for_the_viewer(bot: Bot) -> None:
    await start_run(bot)
    await bot.settle()
    reply = await bot.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    assert reply.status == 200
    (published,) = await bot.fake.wait_for("views.publish")
    assert published.args["user_id"] == APPROVER
    assert "deploy_release" in json.dumps(published.args["view"])
