"""`approvals-bot manifest`: manifest.yml, ready to paste into "Create New App".

    approvals-bot manifest --url https://bot.example.com      HTTP mode: every request URL
                                                              filled in (/slack/events)
    approvals-bot manifest --socket-mode                      Socket Mode: no URL at all

The manifest is the checkout's manifest.yml (the package is installed from a checkout),
changed as text so that its comments and layout stay: the four request URLs (the two
slash commands, event subscriptions, interactivity) become the bot's, or go, with
`socket_mode_enabled: true`, for Socket Mode. Its scopes are what the code needs
(bot.slack.scopes); `approvals-bot doctor` checks them.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bot.errors import ConfigError, InputError

PLACEHOLDER = "https://YOUR-HOST/slack/events"
EVENTS_PATH = "/slack/events"  # bot.slack.server's (not imported: Slack's libraries are slow)
SOCKET_OFF = "socket_mode_enabled: false"
MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "manifest",
        help="print the Slack app manifest with the bot's request URLs filled in",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--url",
        metavar="URL",
        help="the public HTTPS address that reaches `approvals-bot serve` "
        "(https://bot.example.com; /slack/events is added)",
    )
    mode.add_argument(
        "--socket-mode", action="store_true", help="for `approvals-bot socket`: no URLs"
    )
    parser.set_defaults(func=print_manifest)


def print_manifest(args: argparse.Namespace) -> int:
    text = manifest_text()
    print(socket_mode(text) if args.socket_mode else with_url(text, events_url(args.url)), end="")
    return 0


def manifest_text(path: Path = MANIFEST) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path} is not there: approvals-bot is run from its checkout "
            "(pip install -e . in it), where manifest.yml is"
        ) from None


def events_url(url: str) -> str:
    """The request URL for `url`: https, a host, its path ending in /slack/events."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.hostname:
        raise InputError(f"--url must be an https:// address Slack can reach, not {url[:80]!r}")
    if parts.query or parts.fragment:
        raise InputError("--url takes no query string or fragment")
    path = parts.path.rstrip("/")
    if not path.endswith(EVENTS_PATH):
        path += EVENTS_PATH
    return urlunsplit(("https", parts.netloc, path, "", ""))


def with_url(text: str, url: str) -> str:
    """The manifest with every request URL set to `url`, its header saying how it was made."""
    _placeholders(text)
    return _header(f"--url {url}") + _body(text).replace(PLACEHOLDER, url)


def socket_mode(text: str) -> str:
    """The manifest for Socket Mode: no request URL, socket_mode_enabled: true."""
    _placeholders(text)
    lines = [line for line in _body(text).splitlines(keepends=True) if PLACEHOLDER not in line]
    body = "".join(lines)
    if SOCKET_OFF not in body:
        raise ConfigError(f"{MANIFEST} has no `{SOCKET_OFF}` line to turn on")
    return _header("--socket-mode") + body.replace(SOCKET_OFF, "socket_mode_enabled: true")


def manifest_scopes(text: str) -> list[str]:
    """The bot scopes the manifest requests (oauth_config.scopes.bot), read from its text."""
    found: list[str] = []
    inside = False
    for line in text.splitlines():
        if re.fullmatch(r"\s+bot:\s*", line):
            inside = True
        elif inside and (item := re.fullmatch(r"\s+-\s+(\S+)\s*", line)):
            found.append(item.group(1))
        elif inside and line.strip():
            break
    return found


def _placeholders(text: str) -> None:
    if PLACEHOLDER not in text:
        raise ConfigError(f"{MANIFEST} holds no {PLACEHOLDER} to fill in: was it edited?")


def _header(how: str) -> str:
    return (
        f"# Slack app manifest for approvals-bot (approvals-bot manifest {how}).\n"
        "# Create the app at https://api.slack.com/apps -> Create New App -> From an app\n"
        "# manifest, and paste this.\n"
    )


def _body(text: str) -> str:
    """The manifest without its leading comment (the header replaces it)."""
    lines = text.splitlines(keepends=True)
    first = next(index for index, line in enumerate(lines) if not line.startswith("#"))
    return "".join(lines[first:])
