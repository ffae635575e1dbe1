"""An operator decides from the CLI while the bot is not running: with SLACK_BOT_TOKEN
the CLI updates the card and answers in the run's thread, as the bot would. The CLI is
a real subprocess; Slack is the fake Web API."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp

from bot.demo import default_registry, ops_dependencies
from bot.service import ApprovalService, TaskOwner
from bot.slack.gateway import SlackGateway
from bot.slack.notifier import SlackNotifier
from store import open_store
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import BOT_TOKEN, CHANNEL, REQUESTER

REPO = Path(__file__).resolve().parents[2]


async def _slack_run(fake: FakeSlack, db: Path, effects: Path) -> tuple[str, str, str]:
    """A run started from Slack by the bot, paused on its card; then the bot stops.
    Returns (run id, approval id, digest)."""
    store = await open_store(str(db), environ={})
    try:
        async with aiohttp.ClientSession() as session:
            gateway = SlackGateway.open(token=BOT_TOKEN, api_url=fake.api_url, session=session)
            service = ApprovalService(
                store=store,
                registry=default_registry(),
                notifier=SlackNotifier(gateway),
                dependencies=ops_dependencies({"APPROVALS_DEMO_EFFECTS": str(effects)}),
                tasks=TaskOwner(),
                worker_id="the-bot",
            )
            run = await service.start_run(
                agent_name=None, task="restart api", requester=REQUESTER, channel=CHANNEL
            )
            await service.aclose()
        [approval] = await store.list_approvals(run_id=run.run_id)
        return run.run_id, approval.approval_id, approval.arguments_digest
    finally:
        await store.close()


async def test_a_cli_decision_updates_the_card_and_answers_in_the_thread(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    db, effects = tmp_path / "approvals.db", tmp_path / "effects.jsonl"
    run_id, approval_id, digest = await _slack_run(fake_slack, db, effects)
    [card] = [c for c in fake_slack.calls_to("chat.postMessage") if "Approval needed" in c.text]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APPROVALS_", "SLACK_"))}
    env.update(
        APPROVALS_DATABASE_URL=str(db),
        APPROVALS_DEMO_EFFECTS=str(effects),
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_API_URL=fake_slack.api_url,
        PYTHONPATH=str(REPO),
    )

    cli = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "approvals", "decide", approval_id, "--approve",
        "--as", "U0OPERATOR", "--reason", "Slack is down", "--digest", digest,
        env=env, cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(cli.communicate(), timeout=60)

    assert cli.returncode == 0, err.decode()
    assert f"run {run_id} is completed" in out.decode()
    updates = [c for c in fake_slack.calls_to("chat.update") if c.args["ts"] == card.answer["ts"]]
    assert any("Approved" in c.text and "U0OPERATOR" in c.text for c in updates)
    thread = card.args["thread_ts"]
    answers = [
        c for c in fake_slack.calls_to("chat.postMessage") if c.args.get("thread_ts") == thread
    ]
    assert any("restarted api" in c.text for c in answers)
    assert all(c.token == BOT_TOKEN for c in fake_slack.calls)
