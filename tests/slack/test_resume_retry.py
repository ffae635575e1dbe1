"""A resume the database fails, as the thread sees it: told once that the bot keeps
trying, a reply answered with why the run waits (not "still working"), and the answer
once the database is back. The failure is real: another connection takes SQLite's write
lock right after the deploy acted, so its result cannot be recorded."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.service.retry import RetryPolicy
from bot.slack.messages import replies, run_thread
from store.crypto import KeyRing
from tests.slack.fake_slack import FakeSlack
from tests.slack.governance_harness import told
from tests.slack.slack_harness import (
    APPROVER,
    REQUESTER,
    Bot,
    in_thread,
    open_modal,
    sqlite_file,
    start_bot,
    start_run,
    stop_bot,
    thread_message,
)


async def no_wait(seconds: float) -> None:
    return None


@pytest.fixture
async def fragile(fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    """A bot whose writes give up on another connection's lock after 50 ms and whose
    resumes try twice before they are parked."""
    started, runner, session = await start_bot(
        fake_slack,
        tmp_path / "approvals.db",
        keyring,
        busy_timeout_ms=50,
        resume_retry=RetryPolicy(attempts=2, sleep=no_wait),
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


async def test_the_thread_hears_the_truth_while_the_database_fails(fragile: Bot) -> None:
    other = sqlite3.connect(sqlite_file(fragile.store), isolation_level=None)

    def lock_the_database() -> None:
        other.execute("BEGIN IMMEDIATE")

    try:
        fragile.effects.then = lock_the_database
        root, (card,) = await start_run(fragile)
        view = await open_modal(fragile, card, "Approve", user=APPROVER)
        await fragile.driver.submit(view, user=APPROVER, reason="ship it")
        (stalled,) = await fragile.fake.wait_for(
            "chat.postMessage", in_thread(root, "could not go on")
        )
        assert stalled.args["text"] == run_thread.resume_stalled_text(2)

        reply = thread_message(root, "is it done?", user=REQUESTER, ts="1700000099.000001")
        await fragile.driver.event(reply)
        (answer,) = await fragile.fake.wait_for("chat.postEphemeral", told(REQUESTER, "database"))
        assert answer.args["text"] == replies.RETRYING_TEXT
        other.execute("ROLLBACK")
    finally:
        other.close()

    await fragile.service.sweep()  # the sweeper's pass, after the lock cleared
    await fragile.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await fragile.settle()
    [(_, _, key), (_, _, again)] = fragile.effects.deploys
    assert again == key  # the idempotent deploy ran again under its execution key
    notices = [c for c in fragile.fake.calls_to("chat.postMessage") if "could not go on" in c.text]
    assert len(notices) == 1
