"""A policy that names Slack user groups, at the terminal: Slack is not asked who is in
a group, so a refusal says so, and `--groups-from FILE` names the members (the demo and
the operator commands)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.operator_support import Home

POLICY = '[tools.restart_service]\napprovers = ["S0RELEASE"]\n'
NOTE = (
    "approvals-bot: S0RELEASE: Slack user group(s), whose members come from Slack, which "
    'this command does not ask; name them in a file (S0RELEASE = ["{user}"]) and pass '
    "--groups-from FILE"
)


@pytest.fixture
def governed(home: Home) -> Home:
    policy = home.path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    return home


def groups_file(home: Home, text: str) -> Path:
    path = home.path / "groups.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_demo_says_a_group_is_not_known_here_and_how_to_name_it(governed: Home) -> None:
    code, _, err = governed.cli("demo", "restart api", "--approve", "--approver", "U0ALICE")
    assert code == 2
    refused, note, finish = err.splitlines()
    assert refused == (
        "approvals-bot: error: you are not an approver for this tool (approvers: S0RELEASE)"
    )
    assert note == NOTE.format(user="U0ALICE")
    assert "stays paused. Decide it later: approvals-bot approvals decide " in finish
    assert governed.effect_lines() == []


def test_the_demo_decides_as_a_member_the_groups_file_names(governed: Home) -> None:
    path = groups_file(governed, 'S0RELEASE = ["U0ALICE", "U0BOB"]\n')
    code, out, err = governed.cli(
        "demo", "restart api", "--approve", "--approver", "U0ALICE", "--groups-from", str(path)
    )
    assert code == 0, err
    assert "restart_service: approved by U0ALICE" in out
    [effect] = governed.effect_lines()
    assert effect["tool"] == "restart_service"


def test_someone_the_file_leaves_out_is_refused_without_the_note(governed: Home) -> None:
    path = groups_file(governed, 'S0RELEASE = ["U0BOB"]\n')
    code, _, err = governed.cli(
        "demo", "restart api", "--approve", "--approver", "U0ALICE", "--groups-from", str(path)
    )
    assert code == 2
    assert "not an approver" in err
    assert "--groups-from FILE" not in err  # the group is known here: the answer is the policy's


def test_approvals_decide_and_show_take_the_groups_file(governed: Home) -> None:
    _, [approval] = governed.paused()
    shown = governed.cli("approvals", "show", approval.approval_id, "--as", "U0BOB")[1]
    assert f"  note:      {NOTE.format(user='U0BOB').removeprefix('approvals-bot: ')}" in shown

    decide = ("approvals", "decide", approval.approval_id, "--approve", "--as", "U0BOB",
              "--reason", "release duty", "--digest", approval.arguments_digest)  # fmt: skip
    code, _, err = governed.cli(*decide)
    assert code == 2
    assert (
        err.splitlines()[1] == NOTE.format(user="U0BOB") + " (or set SLACK_BOT_TOKEN to ask Slack)"
    )

    path = groups_file(governed, 'S0RELEASE = ["U0BOB"]\n')
    code, out, err = governed.cli(*decide, "--groups-from", str(path))
    assert code == 0, err
    assert re.search(r"run \w+ is completed", out)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('S0RELEASE = "U0BOB"\n', "S0RELEASE: must be a list of Slack user ids"),
        ('S0RELEASE = ["bob"]\n', "S0RELEASE: 'bob' is not a Slack user id (U…, W…)"),
        ('release = ["U0BOB"]\n', "'release' is not a Slack user group id (S…)"),
        ("S0RELEASE = [\n", "not valid TOML"),
    ],
)
def test_a_bad_groups_file_is_one_line_and_stores_nothing(
    governed: Home, text: str, problem: str
) -> None:
    path = groups_file(governed, text)
    code, _, err = governed.cli("demo", "restart api", "--approve", "--groups-from", str(path))
    assert code == 2
    assert err.startswith(f"approvals-bot: error: --groups-from {path}: ")
    assert problem in err
    assert not governed.db.exists()


def test_a_second_approval_the_demo_cannot_give_stops_it_paused(home: Home) -> None:
    policy = home.path / "policy.toml"
    policy.write_text("[tools.restart_service]\nrequired_approvals = 2\n", encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    code, out, err = home.cli("demo", "restart api", "--approve", "--approver", "U0ALICE")
    assert code == 2
    assert "restart_service: 1 of 2 approvals (U0ALICE)" in out
    needs, finish = err.splitlines()
    assert needs == (
        "approvals-bot: error: restart_service needs 2 approvals from different people and has "
        "1 (U0ALICE); the others decide it as themselves"
    )
    assert "stays paused. Decide it later: approvals-bot approvals decide " in finish
