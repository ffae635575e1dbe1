"""`approvals-bot` command line: one parser, sub-commands registered by their modules.

Each module in `bot.commands` exposes `register(subparsers)` and sets `func` on its
parsers; `func(args)` returns an exit code. Errors from our tree become one clear line
on stderr (then a line per note a command added: what to do next) and exit code 2;
nothing else is caught.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from bot import __version__
from bot.env_file import load_env_file
from bot.errors import ApprovalsError
from bot.logs import announce, install_log_redaction

COMMAND_MODULES = (
    "bot.commands.demo",
    "bot.commands.keys",
    "bot.commands.audit",
    "bot.commands.runs",
    "bot.commands.approvals",
    "bot.commands.policy",
    "bot.commands.mcp",
    "bot.commands.database",
    "bot.commands.serve",
    "bot.commands.dev",
    "bot.commands.manifest",
    "bot.commands.doctor",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="approvals-bot",
        description="A Slack bot that puts a human between an AI agent and its tools.",
    )
    parser.add_argument("--version", action="version", version=f"approvals-bot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


ERROR_LINE_CHARS = 500


def clipped(message: str, *, width: int = ERROR_LINE_CHARS) -> str:
    """`message` with each line cut to `width` characters: an error may quote what it
    was given, and never echoes kilobytes of it back."""
    return "\n".join(
        line if len(line) <= width else f"{line[: width - 1]}… ({len(line)} characters)"
        for line in message.split("\n")
    )


def main(argv: Sequence[str] | None = None) -> int:
    install_log_redaction()  # no credential in any log line of any command
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        load_env_file()  # ./.env fills in what the environment does not set
        code: int = args.func(args)
    except ApprovalsError as error:
        announce(f"error: {clipped(str(error))}", level=logging.ERROR)
        for note in getattr(error, "__notes__", ()):  # what to do next, added on the way up
            announce(note, level=logging.ERROR)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): stop quietly, as Unix tools do. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code
