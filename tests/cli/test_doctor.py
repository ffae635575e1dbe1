"""`approvals-bot doctor`: one line a check, exit 1 on any failure, nothing changed;
against the fake Slack Web API and real databases."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bot.slack.scopes import required_bot_scopes
from store import open_store
from store.keys import key_file_for
from tests.cli.operator_support import subprocess_env
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import fake_slack
from tests.store.store_helpers import make_run

__all__ = ["fake_slack"]  # the fixture
NAMES = [
    "environment",
    "database",
    "keys",
    "agents and policy",
    "slack auth.test",
    "manifest scopes",
    "token scopes",
]


async def doctor(
    home: Path, fake: FakeSlack, **extra: str
) -> tuple[int, dict[str, str], list[str]]:
    """Run `approvals-bot doctor` in `home`: (exit code, status by check, lines)."""
    settings = {
        "SLACK_BOT_TOKEN": "xoxb-doctor",
        "SLACK_SIGNING_SECRET": "doctor-secret",
        "SLACK_API_URL": fake.api_url,
        **extra,
    }
    env = subprocess_env(home, **{name: value for name, value in settings.items() if value})
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "doctor", cwd=home, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(60):  # the fake Slack answers on this loop meanwhile
        out, err = await process.communicate()
    assert err == b""
    assert process.returncode is not None
    lines = out.decode().splitlines()
    statuses = {line[6:].split(":", 1)[0]: line[:5].strip() for line in lines}
    assert list(statuses) == NAMES, lines
    return process.returncode, statuses, lines


def line_of(lines: list[str], name: str) -> str:
    [line] = [line for line in lines if line[6:].startswith(f"{name}:")]
    return line


async def sealed_database(path: Path) -> None:
    store = await open_store(str(path), environ={})
    try:
        await make_run(store, "run-1")
    finally:
        await store.close()


async def test_a_ready_deployment_passes_every_check(tmp_path: Path, fake_slack: FakeSlack) -> None:
    fake_slack.granted_scopes = sorted(required_bot_scopes())
    await sealed_database(tmp_path / "approvals.db")
    code, statuses, lines = await doctor(tmp_path, fake_slack)
    assert code == 0, lines
    assert set(statuses.values()) == {"ok"}, lines
    assert "they open everything sealed (key ids " in line_of(lines, "keys")
    assert "bot UBOT0001 of team T0000001" in line_of(lines, "slack auth.test")
    assert "manifest.yml asks for the 9 the code calls for" in line_of(lines, "manifest scopes")


async def test_it_changes_nothing(tmp_path: Path, fake_slack: FakeSlack) -> None:
    code, statuses, lines = await doctor(tmp_path, fake_slack)
    assert code == 0, lines
    assert "does not exist yet: serve creates it" in line_of(lines, "database")
    assert "no key file yet" in line_of(lines, "keys")
    assert statuses["token scopes"] == "skip"  # the fake said nothing of the scopes
    assert sorted(os.listdir(tmp_path)) == []  # no database, no key file


async def test_each_problem_is_its_line_and_exit_1(tmp_path: Path, fake_slack: FakeSlack) -> None:
    await sealed_database(tmp_path / "approvals.db")
    key_file_for(tmp_path / "approvals.db").unlink()
    fake_slack.fail("auth.test", error="invalid_auth")
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools.refund]\napprovers = ["U0FIN"]\n', encoding="utf-8")

    code, statuses, lines = await doctor(tmp_path, fake_slack, APPROVALS_POLICY=str(policy))
    assert code == 1
    assert statuses == {
        "environment": "ok",
        "database": "ok",
        "keys": "FAIL",
        "agents and policy": "FAIL",
        "slack auth.test": "FAIL",
        "manifest scopes": "ok",
        "token scopes": "skip",
    }
    assert "its key file" in line_of(lines, "keys")
    assert "is missing" in line_of(lines, "keys")
    assert "tools.refund: no agent has a tool named 'refund'" in line_of(lines, "agents and policy")
    assert line_of(lines, "slack auth.test").endswith(
        "SLACK_BOT_TOKEN rejected by Slack: invalid_auth"
    )


async def test_a_token_without_a_scope_the_code_needs_fails(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.granted_scopes = sorted(required_bot_scopes() - {"usergroups:read"})
    code, statuses, lines = await doctor(tmp_path, fake_slack)
    assert code == 1
    assert statuses["token scopes"] == "FAIL"
    assert "the token lacks usergroups:read" in line_of(lines, "token scopes")


async def test_missing_settings_fail_and_skip_what_needs_them(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    code, statuses, lines = await doctor(tmp_path, fake_slack, SLACK_SIGNING_SECRET="")
    assert code == 1
    assert line_of(lines, "environment") == "FAIL  environment: SLACK_SIGNING_SECRET is not set"
    assert statuses["slack auth.test"] == "skip"


async def test_with_an_app_token_it_checks_socket_mode(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    code, _, lines = await doctor(
        tmp_path, fake_slack, SLACK_APP_TOKEN="xapp-1-doctor", SLACK_SIGNING_SECRET=""
    )
    assert code == 0, lines
    assert "socket mode, probes on 127.0.0.1:3000" in line_of(lines, "environment")
