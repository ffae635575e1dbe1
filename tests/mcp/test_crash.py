"""The gateway killed (SIGKILL) while an approved call runs upstream: the restarted bot
does not send it again (an upstream call has no idempotency key: replay `manual`); the
call ends uncertain, a person is asked to reconcile it, and the client's retry is told."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tests.mcp.harness import (
    Setup,
    abandon,
    call_in_own_session,
    decide,
    gateway,
    mcp_session,
    next_card,
    slack_driver,
    start_gateway,
    text_of,
)
from tests.polling import until
from tests.slack.fake_slack import FakeSlack

pytestmark = pytest.mark.slow


async def test_a_kill_mid_call_leaves_it_uncertain_never_run_twice(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    setup = Setup(workdir=tmp_path)
    setup.write(wait="2s")
    env = setup.env(fake_slack)
    served, url = await start_gateway(env)
    try:
        async with slack_driver(served, fake_slack) as driver:
            call = asyncio.create_task(
                call_in_own_session(url, setup.token, "ops__slow_deploy", {"service": "api"})
            )
            card = await next_card(fake_slack)
            await decide(fake_slack, driver, card, "Approve")

            async def started() -> bool | None:
                return True if setup.effects() else None

            await until(started, "the upstream call to start")
            await served.kill()
            await abandon(call)
    finally:
        if served.process.returncode is None:
            await served.kill()

    async with gateway(env) as (_, url), mcp_session(url, setup.token, mode="legacy") as client:
        (notice,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: "may or may not have taken effect" in c.text
        )
        assert notice.args["thread_ts"] == card.args["thread_ts"]
        retry = await client.call_tool("ops__slow_deploy", {"service": "api"})
    assert retry.is_error
    assert "uncertain" in text_of(retry)
    assert [(e["tool"], e.get("phase")) for e in setup.effects()] == [("slow_deploy", "started")]
    with sqlite3.connect(tmp_path / "approvals.db") as database:
        ledger = database.execute("SELECT tool_name, state FROM ledger").fetchall()
        runs = database.execute("SELECT status FROM runs").fetchall()
    assert ledger == [("ops__slow_deploy", "uncertain")]
    assert runs == [("paused",)]
