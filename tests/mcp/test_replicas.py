"""Two gateways on one Postgres database: a client's call waits on one replica, its
retry lands on the other (as behind a load balancer) and attaches to the same approval;
the decision is taken through either; the call runs once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from store.keys import format_key, generate_key
from tests.mcp.harness import (
    Progress,
    Setup,
    call_in_own_session,
    decide,
    gateway,
    next_card,
    slack_driver,
    text_of,
)
from tests.polling import until
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import card_calls

pytestmark = pytest.mark.slow

DEPLOY = {"service": "api", "version": "2.0.0"}


async def test_a_retry_on_the_other_replica_attaches_to_the_same_approval(
    fake_slack: FakeSlack, tmp_path: Path, postgres_url: str
) -> None:
    setup = Setup(workdir=tmp_path)
    files = [setup.write(wait="1s", name="a.toml"), setup.write(wait="30s", name="b.toml")]
    key = format_key(generate_key("k1"))
    envs = [
        {
            **setup.env(fake_slack, APPROVALS_DATABASE_URL=postgres_url),
            "APPROVALS_MCP": str(file),
            "APPROVALS_WORKER_ID": f"replica-{file.stem}",
            "APPROVALS_KEYS": key,
        }
        for file in files
    ]
    async with (
        gateway(envs[0]) as (served_a, url_a),
        gateway(envs[1]) as (_, url_b),
        slack_driver(served_a, fake_slack) as driver_a,
    ):
        first = await call_in_own_session(url_a, setup.token, "ops__deploy", DEPLOY, mode="legacy")
        assert "is pending" in text_of(first)
        card = await next_card(fake_slack)

        waiting = Progress()  # the retry lands on replica b and waits there
        retry = asyncio.create_task(
            call_in_own_session(
                url_b, setup.token, "ops__deploy", DEPLOY, mode="legacy", progress=waiting
            )
        )
        await until(lambda: _said(waiting), "the retry waiting on replica b")
        assert "waiting for a person to decide approval" in waiting.messages[0]
        await decide(fake_slack, driver_a, card, "Approve")  # decided, and run, through a
        result = await retry
    assert not result.is_error, text_of(result)
    assert "deploy done" in text_of(result)
    assert len(card_calls(fake_slack)) == 1
    assert [effect["tool"] for effect in setup.effects()] == ["deploy"]


async def _said(progress: Progress) -> bool | None:
    return True if progress.messages else None
