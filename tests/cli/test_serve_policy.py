"""`approvals-bot serve` refuses a policy file that could not mean what it says, with one
line and before it opens anything: an id with a trailing newline would match nobody
(an admin who is no admin), a limit of zero would stop every run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main


@pytest.mark.parametrize(
    ("policy", "line"),
    [
        ('admins = ["U0ADMIN\\n"]\n', "admins: 'U0ADMIN\\n' is not a Slack id"),
        (
            '[tools.deploy_release]\napprovers = ["S0OPS\\n"]\n',
            "tools.deploy_release.approvers: 'S0OPS\\n' is not a Slack id",
        ),
        ("[limits]\ntool_calls_per_turn = 0\n", "limits.tool_calls_per_turn: must be"),
    ],
)
def test_serve_stops_on_a_policy_that_cannot_mean_what_it_says(
    policy: str,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(policy, encoding="utf-8")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    monkeypatch.setenv("APPROVALS_POLICY", str(path))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"policy file {path}: {line}" in err[0]
    assert not (tmp_path / "a.db").exists()


def test_serve_reports_every_problem_of_the_policy_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As `policy check` does: a bad value and a table for a tool no agent has, together
    (not the first, then after a fix the next)."""
    path = tmp_path / "policy.toml"
    path.write_text(
        '[defaults]\nexpires_after = "soon"\n[tools.refund]\nrequired_approvals = 1\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    monkeypatch.setenv("APPROVALS_POLICY", str(path))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"approvals-bot: error: policy file {path}: 2 problems:"
    assert err[1].startswith("  defaults.expires_after: ")
    assert err[2].startswith("  tools.refund: no agent has a tool named 'refund'")
    assert len(err) == 3
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        ("APPROVALS_STARTING_RUNS", "0", "APPROVALS_STARTING_RUNS must be at least 1, not '0'"),
        ("APPROVALS_STARTING_RUNS", "eight", "APPROVALS_STARTING_RUNS must be a whole number"),
        ("APPROVALS_WAITING_RUNS", "-1", "APPROVALS_WAITING_RUNS must be at least 0, not '-1'"),
    ],
)
def test_serve_stops_on_a_start_bound_that_cannot_work(
    name: str,
    value: str,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The bounds on runs being started (bot.slack.admission) are checked with the rest
    of the configuration: one line naming the setting, and nothing opened."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert line in err[0]
    assert not (tmp_path / "a.db").exists()
