"""A decision is in the database before Slack gets the answer to its modal (Slack closes
the modal on that answer). The database is made slow or failing for real: another
connection holds SQLite's write lock on the bot's file."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.slack import interactions
from bot.slack.messages import replies
from store.crypto import KeyRing
from tests.slack.fake_slack import FakeSlack
from tests.slack.governance_harness import approval_id_of, card_update, told
from tests.slack.slack_harness import (
    APPROVER,
    Bot,
    in_thread,
    open_modal,
    sqlite_file,
    start_bot,
    start_run,
    stop_bot,
)

BUSY_SECONDS = 0.3  # how long the test keeps the database busy before it looks


@contextmanager
def write_lock(database: Path) -> Iterator[None]:
    """Another connection holding the database's write lock (as another process would)."""
    other = sqlite3.connect(database, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


async def status_of(bot: Bot, approval_id: str) -> str:
    record = await bot.store.get_approval(approval_id)
    assert record is not None
    return record.status


async def test_slack_is_answered_only_once_the_decision_is_committed(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    with write_lock(sqlite_file(bot.store)):
        submit = asyncio.create_task(bot.driver.submit(view, user=APPROVER, reason="ship it"))
        done, _ = await asyncio.wait({submit}, timeout=BUSY_SECONDS)
        assert not done  # no "done" for Slack while the database cannot take the vote
    reply = await submit
    assert (reply.status, reply.text) == (200, "")
    assert await status_of(bot, approval_id_of(card)) == "approved"  # before any follow-up
    await bot.fake.wait_for("chat.update", card_update(card, "Approved"))
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))


async def test_a_database_too_slow_for_the_answer_keeps_the_modal_open_then_tells(
    bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(interactions, "SUBMISSION_BUDGET_SECONDS", 0.2)
    root, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    with write_lock(sqlite_file(bot.store)):
        reply = await bot.driver.submit(view, user=APPROVER, reason="ship it")
        assert reply.json() == {
            "response_action": "errors",
            "errors": {"reason": replies.NOT_RECORDED_YET_TEXT},
        }
        assert await status_of(bot, approval_id_of(card)) == "pending"
    # The lock is gone: the commit that waited lands, and the person hears of it.
    await bot.fake.wait_for(
        "chat.postEphemeral", told(APPROVER, "was recorded after all (the database answered")
    )
    await bot.fake.wait_for("chat.update", card_update(card, "Approved"))
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert len(bot.effects.deploys) == 1


@pytest.fixture
async def impatient(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    """A bot whose writes give up on another connection's lock after 50 ms."""
    started, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, busy_timeout_ms=50
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


async def test_a_failing_database_keeps_the_modal_open_and_nothing_changes(
    impatient: Bot,
) -> None:
    _, (card,) = await start_run(impatient)
    view = await open_modal(impatient, card, "Reject", user=APPROVER)
    with write_lock(sqlite_file(impatient.store)):
        reply = await impatient.driver.submit(view, user=APPROVER, reason="not today")
    assert reply.json() == {
        "response_action": "errors",
        "errors": {"reason": replies.NOT_RECORDED_TEXT},
    }
    await impatient.settle()
    assert await status_of(impatient, approval_id_of(card)) == "pending"
    assert impatient.fake.calls_to("chat.update") == []

    again = await impatient.driver.submit(view, user=APPROVER, reason="not today")
    assert (again.status, again.text) == (200, "")
    assert await status_of(impatient, approval_id_of(card)) == "rejected"
    await impatient.fake.wait_for("chat.update", card_update(card, "Rejected"))
