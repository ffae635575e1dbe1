"""manifest.yml follows the app-manifest schema rules and matches what the bot serves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.commands.manifest import manifest_scopes
from bot.slack.app import AGENT_COMMAND, APPROVALS_COMMAND
from bot.slack.scopes import EVENT_SCOPES as CODE_EVENT_SCOPES
from bot.slack.scopes import METHOD_SCOPES, required_bot_scopes
from bot.slack.server import EVENTS_PATH

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"

# Bot scopes Slack knows (a subset of the published list, enough to catch typos).
KNOWN_BOT_SCOPES = {
    "app_mentions:read",
    "channels:history",
    "channels:join",
    "channels:manage",
    "channels:read",
    "chat:write",
    "chat:write.customize",
    "chat:write.public",
    "commands",
    "emoji:read",
    "files:read",
    "files:write",
    "groups:history",
    "groups:read",
    "groups:write",
    "im:history",
    "im:read",
    "im:write",
    "links:read",
    "links:write",
    "mpim:history",
    "mpim:read",
    "mpim:write",
    "pins:read",
    "pins:write",
    "reactions:read",
    "reactions:write",
    "reminders:read",
    "reminders:write",
    "team:read",
    "usergroups:read",
    "usergroups:write",
    "users.profile:read",
    "users:read",
    "users:read.email",
    "users:write",
}
# The scope each bot event needs (None: no scope needed).
EVENT_SCOPES: dict[str, str | None] = {
    "app_home_opened": None,
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_display_information_fits_the_schema(manifest: dict[str, Any]) -> None:
    info = manifest["display_information"]
    assert 1 <= len(info["name"]) <= 35
    assert len(info.get("description", "")) <= 140
    assert 175 <= len(info["long_description"]) <= 4000
    assert re.fullmatch(r"#[0-9a-fA-F]{6}", info["background_color"])


def test_bot_user_and_home_tab(manifest: dict[str, Any]) -> None:
    features = manifest["features"]
    assert 1 <= len(features["bot_user"]["display_name"]) <= 80
    assert features["app_home"]["home_tab_enabled"] is True


def test_slash_commands_are_well_formed_and_served(manifest: dict[str, Any]) -> None:
    commands = manifest["features"]["slash_commands"]
    assert {command["command"] for command in commands} == {AGENT_COMMAND, APPROVALS_COMMAND}
    for command in commands:
        assert re.fullmatch(r"/[a-z0-9_\-]{1,31}", command["command"])
        assert 1 <= len(command["description"]) <= 2000
        assert len(command.get("usage_hint", "")) <= 1000
        assert isinstance(command["should_escape"], bool)


def test_scopes_are_known_and_minimal(manifest: dict[str, Any]) -> None:
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    assert set(scopes) <= KNOWN_BOT_SCOPES, set(scopes) - KNOWN_BOT_SCOPES
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    # conversations.members (who may see and decide a channel's calls) reads public and
    # private channels and group DMs (a DM with the bot is scoped by the policy alone).
    membership = {"channels:read", "groups:read", "mpim:read"}
    direct = {"im:write"}  # conversations.open: cards and outcomes by direct message
    needed = {"commands", "chat:write", "usergroups:read", *membership, *direct} | {
        scope for event in events if (scope := EVENT_SCOPES[event]) is not None
    }
    assert set(scopes) == needed


def test_every_event_is_known_and_has_its_scope(manifest: dict[str, Any]) -> None:
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_home_opened", "message.channels"} <= set(events)
    for event in events:
        assert event in EVENT_SCOPES, f"unknown bot event {event}"
        scope = EVENT_SCOPES[event]
        assert scope is None or scope in scopes, f"{event} needs {scope}"


def test_every_url_is_the_one_events_endpoint(manifest: dict[str, Any]) -> None:
    settings = manifest["settings"]
    urls = [command["url"] for command in manifest["features"]["slash_commands"]]
    urls.append(settings["event_subscriptions"]["request_url"])
    assert settings["interactivity"]["is_enabled"] is True
    urls.append(settings["interactivity"]["request_url"])
    assert len(set(urls)) == 1
    assert urls[0] == f"https://YOUR-HOST{EVENTS_PATH}"


def test_the_description_names_the_keyed_digest(manifest: dict[str, Any]) -> None:
    """The card shows a keyed digest (HMAC-SHA256 of tool, agent and arguments), not a
    plain hash a reader could confirm a guess with."""
    text = " ".join(manifest["display_information"]["long_description"].split())
    assert "keyed digest (HMAC-SHA256" in text
    assert "SHA-256 digest" not in text


# -- the scopes the code needs, and `approvals-bot manifest` ---------------------------

SLACK_CODE = Path(__file__).resolve().parents[2] / "bot" / "slack"
APP_TOKEN_METHODS = {"apps.connections.open"}  # Socket Mode's, with the app-level token
CALLED = re.compile(r"""_call\(\s*"(\w+)"|_client\.(\w+)\(""")


def web_api_methods_called() -> set[str]:
    """Each Web API method bot/slack calls through its client (`chat_postMessage` ->
    chat.postMessage)."""
    found: set[str] = set()
    for path in SLACK_CODE.rglob("*.py"):
        for via_call, via_client in CALLED.findall(path.read_text(encoding="utf-8")):
            found.add((via_call or via_client).replace("_", "."))
    return found - APP_TOKEN_METHODS


def test_every_method_the_code_calls_has_its_scopes_listed() -> None:
    called = web_api_methods_called()
    assert {"chat.postMessage", "usergroups.users.list", "conversations.members"} <= called
    assert called <= set(METHOD_SCOPES), called - set(METHOD_SCOPES)


def test_the_manifest_asks_for_exactly_the_scopes_the_code_needs(
    manifest: dict[str, Any],
) -> None:
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == required_bot_scopes()
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert set(events) == set(CODE_EVENT_SCOPES)
    text = MANIFEST.read_text(encoding="utf-8")
    assert manifest_scopes(text) == manifest["oauth_config"]["scopes"]["bot"]  # doctor's read


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["manifest", *argv]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


def test_manifest_url_fills_in_every_request_url(capsys: pytest.CaptureFixture[str]) -> None:
    for given in ("https://bot.example.com", "https://bot.example.com/slack/events/"):
        printed = _printed(capsys, "--url", given)
        commands = printed["features"]["slash_commands"]
        settings = printed["settings"]
        urls = [command["url"] for command in commands] + [
            settings["event_subscriptions"]["request_url"],
            settings["interactivity"]["request_url"],
        ]
        assert urls == ["https://bot.example.com/slack/events"] * 4
        assert settings["socket_mode_enabled"] is False
        assert printed["oauth_config"] == yaml.safe_load(MANIFEST.read_text())["oauth_config"]


def test_manifest_socket_mode_has_no_url(capsys: pytest.CaptureFixture[str]) -> None:
    printed = _printed(capsys, "--socket-mode")
    assert printed["settings"]["socket_mode_enabled"] is True
    assert "YOUR-HOST" not in str(printed)
    assert all("url" not in command for command in printed["features"]["slash_commands"])
    assert "request_url" not in printed["settings"]["event_subscriptions"]


@pytest.mark.parametrize(
    "url", ["http://bot.example.com", "bot.example.com", "https://", "https://h/x?y=1"]
)
def test_manifest_refuses_a_url_slack_would_not_call(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["manifest", "--url", url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("approvals-bot: error: --url ")


def test_the_slack_guide_uses_the_manifest_command() -> None:
    guide = (MANIFEST.parent / "docs" / "slack.md").read_text(encoding="utf-8")
    assert "approvals-bot manifest --url https://" in guide
    assert "approvals-bot manifest --socket-mode" in guide
