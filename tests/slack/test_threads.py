"""Thread replies, restarts and kills: the conversation and the effects survive the
process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    REQUESTER,
    Bot,
    Effects,
    in_thread,
    open_modal,
    start_bot,
    start_chat,
    start_run,
    stop_bot,
    thread_message,
)


async def test_a_thread_reply_continues_the_conversation_from_the_stored_state(
    bot: Bot,
) -> None:
    root = await start_chat(bot)
    await bot.settle()
    reply = thread_message(root, "tell me more", user=APPROVER, ts="1800000000.000500")
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
    paused = thread_message(root, "hurry up", user=REQUESTER, ts="1800000000.000100")
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


async def test_a_failing_model_ends_the_run_with_a_clear_line_in_the_thread(bot: Bot) -> None:
    root = await start_chat(bot)
    for number, text in enumerate(("more", "and more")):  # the script has two answers
        await bot.settle()
        event = thread_message(root, text, user=APPROVER, ts=f"1800000000.00070{number}")
        assert (await bot.driver.event(event)).status == 200
    (failed,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "The run stopped"))
    assert "script exhausted" in failed.text


async def test_a_malformed_thread_message_is_answered_200_and_ignored(bot: Bot) -> None:
    """A message event without its channel is not one we can act on: no 500 (which
    Slack would redeliver), no reply."""
    event = {
        "type": "message",
        "user": APPROVER,
        "text": "hello",
        "ts": "1800000000.000900",
        "thread_ts": "1800000000.000800",
    }
    assert (await bot.driver.event(event)).status == 200
    await bot.settle()
    assert bot.fake.calls_to("chat.postEphemeral") == []
