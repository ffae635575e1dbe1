"""`approvals-bot serve` as a real process: configuration errors, then the whole path
with the real ops agent (/agent deploy payments 1.2.3 -> card -> approve -> answer)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.cli import main
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_driver import SlackDriver

SECRET = "serve-test-signing-secret"


@pytest.mark.parametrize(
    ("command", "env", "line"),
    [
        ("serve", {}, "SLACK_BOT_TOKEN is not set"),
        ("serve", {"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET is not set"),
        (
            "socket",
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"},
            "SLACK_APP_TOKEN is not set",
        ),
        (
            "serve",
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "PORT": "x"},
            "PORT must be a number",
        ),
    ],
)
def test_bad_configuration_stops_with_one_clear_line(
    command: str,
    env: dict[str, str],
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main([command]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert line in err[0]


def test_an_unknown_agents_module_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_AGENTS", "no_such_module_here:agents")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    assert main(["serve"]) == 2
    assert "APPROVALS_AGENTS: cannot import 'no_such_module_here'" in capsys.readouterr().err
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"APPROVALS_POLICY": "{dir}/policy.toml"},
            "policy file {dir}/policy.toml: tools.deploy_release.required_approvals: 3 "
            "approvals required but only 1 approver(s) listed",
        ),
        ({"APPROVALS_POLICY": "{dir}/missing.toml"}, "policy file {dir}/missing.toml: cannot read"),
        ({"APPROVALS_MODEL": "gpt"}, "APPROVALS_MODEL must be 'offline' or 'openai'"),
    ],
)
def test_a_bad_policy_or_model_stops_start_up_with_one_line(
    env: dict[str, str],
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.toml").write_text(
        '[tools.deploy_release]\napprovers = ["U0ONLY1"]\nrequired_approvals = 3\n'
    )
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(dir=tmp_path))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert line.format(dir=tmp_path) in err[0]
    assert not (tmp_path / "a.db").exists()


def test_a_policy_for_a_tool_no_agent_has_stops_start_up_cleanly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Refused while the service is built, after the Slack session was opened: the one
    line and nothing else (no "Unclosed client session" from a leaked session)."""
    (tmp_path / "policy.toml").write_text('[tools.deploy_releese]\napprovers = ["U0A"]\n')
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    monkeypatch.setenv("APPROVALS_POLICY", str(tmp_path / "policy.toml"))
    assert main(["serve"]) == 2
    gc.collect()  # a leaked session reports itself when collected
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "tools.deploy_releese: no agent has a tool named" in err[0]


@pytest.fixture
async def served(fake_slack: FakeSlack, tmp_path: Path) -> AsyncIterator[tuple[SlackDriver, Path]]:
    effects = tmp_path / "effects.jsonl"
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools.deploy_release]\napprovers = ["S0OPS"]\n')
    fake_slack.usergroups["S0OPS"] = ["U0APP"]
    fake_slack.channel_members["C0OPS"] = ["U0REQ", "U0APP", "U0OUT"]
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-serve",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake_slack.api_url,
        "HOST": "127.0.0.1",
        "PORT": "0",
        "APPROVALS_DATABASE_URL": str(tmp_path / "approvals.db"),
        "APPROVALS_DEMO_EFFECTS": str(effects),
        "APPROVALS_POLICY": str(policy),
        "APPROVALS_MODEL": "offline",
    }
    env.pop("APPROVALS_KEYS", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    url = None
    async with asyncio.timeout(30):
        while url is None:
            line = (await process.stderr.readline()).decode()
            assert line, "serve exited before it listened"
            if match := re.search(r"serving Slack at (http://\S+)", line):
                url = match.group(1)
    try:
        async with aiohttp.ClientSession() as session:
            driver = SlackDriver(
                session=session,
                url=url,
                signing_secret=SECRET,
                response_url=fake_slack.response_url,
            )
            yield driver, effects
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            rest = await process.stderr.read()
            assert await process.wait() == 0, rest.decode()


@pytest.mark.slow
async def test_serve_runs_the_ops_agent_end_to_end(
    served: tuple[SlackDriver, Path], fake_slack: FakeSlack
) -> None:
    driver, effects = served
    health_url = driver.url.replace("/slack/events", "/healthz")
    async with driver._session.get(health_url) as resp:
        assert resp.status == 200
    reply = await driver.command("/agent", "deploy payments 1.2.3", user="U0REQ", channel="C0OPS")
    assert reply.status == 200
    (root,) = await fake_slack.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
    (card,) = await fake_slack.wait_for(
        "chat.postMessage", lambda c: c.args.get("thread_ts") == root.answer["ts"]
    )
    assert "deploy_release" in card.text
    await driver.click(card, "Approve", user="U0OUT", ts=card.answer["ts"])  # not in S0OPS
    (refused,) = await fake_slack.wait_for("chat.postEphemeral")
    assert "not an approver" in refused.text
    await driver.click(card, "Approve", user="U0APP", ts=card.answer["ts"])
    (opened,) = await fake_slack.wait_for("views.open")
    await driver.submit(opened.args["view"], user="U0APP", reason="release train 42")
    (update,) = await fake_slack.wait_for("chat.update")
    assert "<@U0APP>" in update.text
    assert "release train 42" in update.text
    (answer,) = await fake_slack.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == root.answer["ts"] and c is not card,
    )
    assert "payments" in answer.text
    lines = [json.loads(line) for line in effects.read_text().splitlines()]
    assert [line["tool"] for line in lines] == ["deploy_release"]
