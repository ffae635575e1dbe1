"""End to end: someone who can write the database file (not the keys) rewrites what a
card's call shows. The approver is never shown the rewrite, in the modal, the reading
pages or App Home, and cannot approve the call; nothing runs."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from bot.slack.messages.run_thread import final_answer_text
from tests.slack.slack_harness import (
    APPROVER,
    LONG_COMMAND,
    Bot,
    in_thread,
    open_modal,
    sqlite_file,
    start_run,
)

FORGED = "0.0.1-harmless"


def rewrite_snapshot(bot: Bot, approval_id: str, old: str, new: str) -> None:
    """Plain sqlite3 on the bot's file, as the attacker has it: no key ring."""
    connection = sqlite3.connect(sqlite_file(bot.store), isolation_level=None)
    try:
        connection.execute(
            "UPDATE approvals SET snapshot = replace(snapshot, ?, ?) WHERE approval_id = ?",
            (old, new, approval_id),
        )
    finally:
        connection.close()


def approval_id_of(card: Any) -> str:
    return str(card.args["blocks"][-1]["elements"][0]["value"])


async def home(bot: Bot, user: str) -> str:
    before = len(bot.fake.calls_to("views.publish"))
    await bot.driver.event({"type": "app_home_opened", "user": user, "tab": "home"})
    calls = await bot.fake.wait_for("views.publish", count=before + 1)
    return json.dumps(calls[-1].args["view"])


def told(user: str, needle: str) -> Any:
    return lambda c: c.args.get("user") == user and needle in json.dumps(c.args)


async def test_a_rewritten_snapshot_is_never_shown_and_its_call_never_approved(
    bot: Bot,
) -> None:
    _, (card,) = await start_run(bot)  # deploy payments 1.2.3
    approval_id = approval_id_of(card)
    rewrite_snapshot(bot, approval_id, "1.2.3", FORGED)

    view = await open_modal(bot, card, "Approve", user=APPROVER)
    shown = json.dumps(view)
    assert FORGED not in shown
    assert "failed its seal" in shown
    assert FORGED not in await home(bot, APPROVER)

    await bot.driver.submit(view, user=APPROVER, reason=f"{FORGED} is fine")
    await bot.fake.wait_for("chat.postEphemeral", told(APPROVER, "failed its seal"))
    await bot.settle()
    record = await bot.store.get_approval(approval_id)
    assert record is not None
    assert record.status == "pending"
    assert bot.effects.deploys == []
    tampered = [e for e in await bot.store.audit_events() if e.kind == "tamper_detected"]
    assert [(e.approval_id, e.detail["purpose"]) for e in tampered] == [
        (approval_id, "snapshot_seal")
    ]


async def test_a_long_call_shortened_in_the_database_is_not_approved_unread(bot: Bot) -> None:
    _, (card,) = await start_run(bot, "@shell clean up the disk")
    approval_id = approval_id_of(card)
    rewrite_snapshot(bot, approval_id, "true; " * 12_000, "true; ")

    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert "curl" not in json.dumps(view)
    assert "failed its seal" in json.dumps(view)
    await bot.driver.submit(view, user=APPROVER, reason="short enough")
    await bot.fake.wait_for("chat.postEphemeral", told(APPROVER, "failed its seal"))
    await bot.settle()
    assert bot.effects.commands == []
    assert LONG_COMMAND not in bot.effects.commands


HIDING = "\u202e"  # right-to-left override: "exe.txt" reads as "txt.exe"
ZERO_WIDTH = "\u200b"


def texts_of(value: Any) -> str:
    """Every string under a Block Kit value, one per line, as Slack would show it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(texts_of(item) for item in value.values())
    if isinstance(value, list):
        return "\n".join(texts_of(item) for item in value)
    return ""


def hiding_characters_in(calls: list[Any]) -> list[str]:
    """The Slack calls whose arguments carry a hiding character as is."""
    return [
        call.method
        for call in calls
        if HIDING in json.dumps(call.args, ensure_ascii=False)
        or ZERO_WIDTH in json.dumps(call.args, ensure_ascii=False)
    ]


async def test_reasons_messages_and_tasks_show_their_hiding_characters(bot: Bot) -> None:
    root, (card,) = await start_run(bot, f"deploy payments 1.2.3 {HIDING}gpj.exe")
    view = await open_modal(bot, card, "Reject", user=APPROVER)
    await bot.driver.submit(
        view,
        user=APPROVER,
        reason=f"freeze week{HIDING}kees tsuj",
        message=f"Not during the freeze.{ZERO_WIDTH}",
    )
    (update,) = await bot.fake.wait_for("chat.update")
    assert "freeze week\\u202ekees tsuj" in texts_of(update.args["blocks"])
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    await home(bot, APPROVER)  # recent decisions, with their reasons

    assert "\\u202egpj.exe" in root.args["text"]
    assert hiding_characters_in(bot.fake.calls) == []


def test_a_model_answer_shows_its_hiding_characters() -> None:
    text = final_answer_text(
        final_output=f"All done.{HIDING}\nSee {ZERO_WIDTH}ticket.", status="completed"
    )
    assert text == "All done.\\u202e\nSee \\u200bticket."
