"""`approvals-bot dev` as a user runs it: one command, a URL, the demo story through the
page's own API (the browser test drives the same story through Chromium), and the bot
behind it is the real one, reached only over signed HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.cli import main
from bot.commands.dev import workspace_for
from bot.devconsole import DEFAULT_PEOPLE, Workspace
from bot.policy.loading import load_policy
from tests.devconsole.dev_process import PageClient, dev_env, failed_dev, running_dev
from tests.devconsole.story import button, card, refused_calls, texts
from tests.polling import until

ROOT = Path(__file__).resolve().parents[2]
RILEY, ALICE, OLIVE = "U0RILEY", "U0ALICE", "U0OLIVE"


async def test_the_demo_story_end_to_end_through_the_page(tmp_path: Path) -> None:
    env = dev_env(tmp_path)
    async with running_dev(tmp_path, env) as dev, aiohttp.ClientSession() as session:
        assert dev.url.startswith("http://127.0.0.1:")
        assert "/agent deploy payments 1.2.3" in dev.tour
        page = await PageClient.open(session, dev.url)
        assert (await page.act(RILEY, do="send", text="/agent deploy payments 1.2.3"))["ok"]

        async def the_card() -> dict[str, Any] | None:
            return card(await page.seen(ALICE))

        found = await until(the_card, "no review card in #ops")
        approve = {"message_ts": found["ts"], **button(found["blocks"], "Approve")}

        # Olive is not in #ops: her click is refused. Slack shows her no ephemeral message
        # there (it reaches channel members only: the log shows it refused), so the bot
        # tells her in a small notice opened on her click.
        assert (await page.act(OLIVE, do="click", **approve))["ok"]

        async def olive_refused() -> bool | None:
            seen = await page.seen(OLIVE)
            refusal = ("chat.postEphemeral", "user_not_in_channel", "for Olive")
            return True if refusal in refused_calls(seen) else None

        await until(olive_refused, "the bot never refused Olive's click")

        async def olive_told() -> dict[str, Any] | None:
            modal: dict[str, Any] | None = (await page.seen(OLIVE))["modal"]
            return modal if modal and "not a member" in json.dumps(modal) else None

        notice = await until(olive_told, "Olive was never told why nothing opened")
        assert "submit" not in notice["definition"]  # nothing to decide in it

        assert (await page.act(ALICE, do="click", **approve))["ok"]

        async def the_modal() -> dict[str, Any] | None:
            modal: dict[str, Any] | None = (await page.seen(ALICE))["modal"]
            return modal

        modal = await until(the_modal, "Approve opened no modal")
        definition = modal["definition"]
        reason = next(b for b in definition["blocks"] if b["type"] == "input")
        typed = {reason["block_id"]: {reason["element"]["action_id"]: "release window"}}
        answer = await page.act(ALICE, do="submit", view_id=modal["id"], values=typed)
        assert answer["ok"]

        async def the_answer() -> list[str] | None:
            seen = await page.seen(RILEY)
            found = [t for t in texts(seen, ephemeral=False) if "deployed payments 1.2.3" in t]
            return found or None

        await until(the_answer, "no answer in the thread")
        assert (await page.seen(ALICE))["modal"] is None
    effects = (tmp_path / "effects.jsonl").read_text().splitlines()
    assert len(effects) == 1
    assert json.loads(effects[0])["arguments"] == {"service": "payments", "version": "1.2.3"}


async def test_dev_ignores_the_deployment_settings_of_the_shell(tmp_path: Path) -> None:
    """SLACK_*, HOST and APPROVALS_DATABASE_URL of a real deployment are not used: the
    bot listens on 127.0.0.1, on its own SQLite file, and talks to the console only."""
    async with running_dev(tmp_path, dev_env(tmp_path)) as dev:
        started = next(line for line in dev.log if "serving Slack at" in line)
        assert "serving Slack at http://127.0.0.1:" in started
        assert f"database {tmp_path / 'dev.db'}" in started
        assert "policy.toml" in started  # the dev policy: APPROVALS_POLICY is unset
    assert (tmp_path / "dev.db").exists()


async def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    env = dev_env(tmp_path)
    async with running_dev(tmp_path, env) as dev:
        port = dev.url.rsplit(":", 1)[1]
        second = await failed_dev(tmp_path / "second", env, "--port", port)
    assert second[0] == 2
    assert second[1] == [f"approvals-bot: error: cannot listen on 127.0.0.1:{port} (--port): "
                         "Address already in use"]  # fmt: skip


def test_help_says_what_dev_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dev", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("127.0.0.1", "signed Slack request", "--port", "--db", "APPROVALS_POLICY"):
        assert words in text


def test_the_dev_policy_names_the_console_people() -> None:
    from bot.commands.dev import DEV_POLICY

    assert workspace_for(load_policy(str(DEV_POLICY))) == Workspace()
    assert [p.role for p in DEFAULT_PEOPLE] == [
        "requester", "approver", "approver", "admin", "outsider",
    ]  # fmt: skip


def test_the_people_are_fitted_to_a_policy_of_ones_own() -> None:
    policy = load_policy(str(ROOT / "examples" / "policy.toml"))
    workspace = workspace_for(policy)
    approvers = [p.id for p in workspace.people if p.role == "approver"]
    assert approvers == ["U0FINANCE1", "U0FINANCE2"]
    assert [p.id for p in workspace.people if p.role == "admin"] == ["U0SECURITY"]
    # deploy_release needs two of S0RELEASE: the group holds both approvers.
    assert workspace.groups == {"S0RELEASE": ("U0FINANCE1", "U0FINANCE2")}
    assert "U0OLIVE" not in workspace.channel_members
