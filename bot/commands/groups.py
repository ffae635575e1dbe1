"""Slack user groups at the terminal: `--groups-from FILE`.

A policy may name user groups (S…) as approvers; their members come from Slack
(`usergroups.users.list`). The demo never asks Slack, and an operator command asks it
only when SLACK_BOT_TOKEN is set; without it, `--groups-from FILE` names the members:

    # groups.toml: each group id and the user ids in it
    S0RELEASE = ["U0ALICE", "U0BOB"]

A refusal that a group might have prevented (the person is in no group the command
knows the members of) says so, with the way to give them.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from bot.errors import InputError
from bot.policy.eligibility import GroupDirectory, StaticGroups
from bot.policy.rules import SLACK_GROUP_ID, SLACK_USER_ID, ToolRule

OPTION = "--groups-from"


def add_groups_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        OPTION,
        dest="groups_from",
        type=Path,
        default=None,
        metavar="FILE",
        help="members of the policy's Slack user groups, where Slack is not asked: a TOML "
        'file of group ids and their user ids (S0RELEASE = ["U0ALICE", "U0BOB"])',
    )


def load_groups_file(path: Path) -> StaticGroups:
    """The groups in `path`; InputError naming the file and every problem in it."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(f"{OPTION} {path}: cannot read it ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{OPTION} {path}: not valid TOML: {error}") from None
    problems = [problem for group, users in data.items() for problem in _problems(group, users)]
    if problems:
        raise InputError(f"{OPTION} {path}: {'; '.join(problems)}")
    return StaticGroups(data)


def terminal_groups(args: argparse.Namespace, *, asks_slack: bool = False) -> StaticGroups | None:
    """The groups a command knows by `--groups-from` (none given: no group has members),
    or None where it asks Slack instead (`asks_slack`, and no file given)."""
    path: Path | None = getattr(args, "groups_from", None)
    if path is not None:
        return load_groups_file(path)
    return None if asks_slack else StaticGroups()


def _problems(group: str, users: object) -> list[str]:
    if not SLACK_GROUP_ID.fullmatch(group):
        return [f"{group[:40]!r} is not a Slack user group id (S…)"]
    if not isinstance(users, list):
        return [f"{group}: must be a list of Slack user ids"]
    return [
        f"{group}: {str(user)[:40]!r} is not a Slack user id (U…, W…)"
        for user in users
        if not (isinstance(user, str) and SLACK_USER_ID.fullmatch(user))
    ]


def unknown_groups_note(
    rule: ToolRule, person: str, groups: GroupDirectory, *, slack_possible: bool
) -> str | None:
    """Why a refusal of `person` under `rule` may be the terminal's ignorance, not the
    policy's answer: the rule names groups whose members `groups` was not given (None
    when the person is listed, in a known group, or the groups come from Slack)."""
    if not isinstance(groups, StaticGroups) or person in rule.user_approvers:
        return None
    if any(groups.has_member(group, person) for group in rule.group_approvers):
        return None
    unknown = [group for group in rule.group_approvers if not groups.knows(group)]
    if not unknown:
        return None
    listed = ", ".join(unknown)
    example = f'{unknown[0]} = ["{person}"]'
    slack = " (or set SLACK_BOT_TOKEN to ask Slack)" if slack_possible else ""
    return (
        f"{listed}: Slack user group(s), whose members come from Slack, which this command "
        f"does not ask; name them in a file ({example}) and pass {OPTION} FILE{slack}"
    )
