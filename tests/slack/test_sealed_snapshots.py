"""End to end: someone who can write the database file (not the keys) rewrites what a
card's call shows. The approver is never shown the rewrite, in the modal, the reading
pages or App Home, and cannot approve the call; nothing runs."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from tests.slack.slack_harness import (
    APPROVER,
    LONG_COMMAND,
    Bot,
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
