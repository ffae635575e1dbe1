"""`approvals-bot approvals list | show | decide | revoke`: the real entry point on a real
SQLite file, through the real service: the policy, the self-approval rule, the digest
shown and checked again, the audit saying `via: cli`."""

from __future__ import annotations

import getpass
import json
import shlex
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.cli.operator_support import Home, at_a_terminal


@contextmanager
def raw_database(path: Path) -> Iterator[sqlite3.Connection]:
    """The database file as an operator with shell access has it."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        yield connection


def _digest_of(home: Home, approval_id: str) -> str:
    code, out, _ = home.cli("approvals", "show", approval_id)
    assert code == 0
    [line] = [line for line in out.splitlines() if line.strip().startswith("digest:")]
    return line.split()[-1]


def test_decide_binds_the_vote_to_the_digest_shown_then_resumes_here(home: Home) -> None:
    run_id, [approval] = home.paused("restart api")

    code, out, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "checked",
    )  # fmt: skip
    assert code == 2
    assert approval.arguments_digest in out  # the call is shown before anything happens
    assert f"--digest {approval.arguments_digest}" in err
    assert home.audit("decided") == []

    other = "0" * 64
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "checked", "--digest", other,
    )  # fmt: skip
    assert code == 2
    assert "arguments changed since you saw them" in err
    [refused] = home.audit("refused")
    assert (refused["why"], refused["via"]) == ("stale_digest", "cli")

    code, out, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "checked", "--digest", _digest_of(home, approval.approval_id),
    )  # fmt: skip
    assert code == 0, err
    assert f"resuming run {run_id} here" in out
    assert "restarted api" in out
    assert f"run {run_id} is completed" in out
    assert len(home.effect_lines()) == 1
    [decided] = home.audit("decided")
    assert (decided["actor"], decided["via"], decided["reason"]) == ("U0ALICE", "cli", "checked")
    code, out, _ = home.cli("audit", "verify")
    assert code == 0


def test_decide_follows_the_policy(home: Home, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\napprovers = ["U0ALICE"]\n', encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    _, [approval] = home.paused("restart api")
    digest = approval.arguments_digest

    for who, problem in (("U0BOB", "not an approver"), ("demo-requester", "someone else")):
        code, _, err = home.cli(
            "approvals", "decide", approval.approval_id, "--reject", "--as", who,
            "--reason", "no", "--digest", digest,
        )  # fmt: skip
        assert code == 2
        assert problem in err
    assert [r["why"] for r in home.audit("refused")] == ["not_an_approver", "self_approval"]
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--reject", "--as", "U0ALICE",
        "--reason", "not now", "--message", "Try tomorrow.", "--digest", digest,
    )  # fmt: skip
    assert code == 0, err
    assert home.effect_lines() == []


def test_list_pages_with_a_more_line_and_show_says_what_one_may_do(home: Home) -> None:
    for task in ("restart api", "restart web", "restart db"):
        home.paused(task)

    code, out, _ = home.cli("approvals", "list", "--limit", "2")
    assert code == 0
    rows = out.splitlines()
    assert len(rows) == 4  # header, two approvals, the more line
    assert rows[-1].startswith("-- more: approvals-bot approvals list --limit 2 --after ")
    code, rest, _ = home.cli(*shlex.split(rows[-1].removeprefix("-- more: "))[1:])
    assert code == 0
    assert len(rest.splitlines()) == 2  # header and the third
    first_id = rows[1].split()[0]
    code, shown, _ = home.cli("approvals", "show", first_id, "--as", "demo-requester")
    assert code == 0
    assert "demo-requester may: revoke" in shown
    assert "someone else" in shown
    assert "requested" in shown  # the trail


def test_revoke_from_the_cli(home: Home) -> None:
    run_id, [approval] = home.paused("restart api")
    code, out, err = home.cli(
        "approvals", "revoke", approval.approval_id, "--as", "U0ALICE", "--reason", "wrong host"
    )
    assert code == 0, err
    assert "is revoked" in out
    [revoked] = home.audit("revoked")
    assert (revoked["actor"], revoked["via"]) == ("U0ALICE", "cli")
    run = home.store(lambda store: store.get_run(run_id))
    assert run is not None
    assert run.status == "completed"  # it resumed with the call rejected
    assert home.effect_lines() == []


def test_decide_refuses_bad_input_before_anything(home: Home) -> None:
    _, [approval] = home.paused("restart api")
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "x", "--digest", "abc",
    )  # fmt: skip
    assert code == 2
    assert "64 hex" in err
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "x", "--message", "hi",
    )  # fmt: skip
    assert code == 2
    assert "--message goes with --reject" in err
    assert home.audit("refused") == []


def test_decide_at_a_terminal_confirms_the_digest_shown(home: Home) -> None:
    """With no --digest, a person at a terminal confirms the call shown (a real pty)."""
    _, [approval] = home.paused("restart api")
    code, out, err = at_a_terminal(
        home.path,
        ["approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
         "--reason", "at the desk"],
        b"y\n",
    )  # fmt: skip
    assert code == 0, err
    assert f"digest {approval.arguments_digest[:16]}" in out
    assert "restarted api" in out
    [decided] = home.audit("decided")
    assert decided["digest"] == approval.arguments_digest


def test_decide_for_the_rest_of_the_run_from_the_cli(home: Home) -> None:
    policy = home.path / "policy.toml"
    policy.write_text("[tools.restart_service]\nallow_always = true\n", encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    _, [first, _] = home.paused("restart api and restart web")

    code, out, err = home.cli(
        "approvals", "decide", first.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "rolling restart", "--digest", first.arguments_digest, "--always",
    )  # fmt: skip

    assert code == 0, err
    assert "it stands for the rest of the run" in out
    assert len(home.effect_lines()) == 2
    [standing] = home.audit("standing_set")
    assert (standing["actor"], standing["via"]) == ("U0ALICE", "cli")
    decided = home.audit("decided")
    assert [d.get("via") for d in decided] == ["cli", "standing"]
    code, _, err = home.cli(
        "approvals", "revoke", first.approval_id, "--as", "U0ALICE", "--reason", "done"
    )
    assert code == 0, err
    assert len(home.audit("standing_revoked")) == 1


def test_deciding_an_expired_approval_lets_the_run_go_on_before_the_command_exits(
    home: Home,
) -> None:
    home.monkeypatch.setenv("APPROVALS_APPROVAL_TTL_SECONDS", "0.001")  # gone before the decide
    run_id, [approval] = home.paused("restart api")

    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "late", "--digest", approval.arguments_digest,
    )  # fmt: skip

    assert code == 2
    assert "already expired" in err
    run = home.store(lambda store: store.get_run(run_id))
    assert run is not None
    assert run.status == "completed"  # resumed with the call not run, not left resuming
    assert home.effect_lines() == []


def test_a_decision_under_another_policy_than_the_request_is_refused_naming_both(
    home: Home, tmp_path: Path
) -> None:
    """The bot asked under a strict policy; an operator's shell without APPROVALS_POLICY
    (the built-in defaults: anyone but the requester) must not decide under its own."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\napprovers = ["U0ALICE"]\n', encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    run_id, [approval] = home.paused("restart api")
    home.monkeypatch.delenv("APPROVALS_POLICY")
    digest = approval.arguments_digest

    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0BOB",
        "--reason", "looks fine", "--digest", digest,
    )  # fmt: skip

    assert code == 2, "a decision under the built-in defaults was taken"
    strict = getattr(approval, "policy_fingerprint", None)
    assert strict is not None
    [line] = err.strip().splitlines()
    assert f"was requested under policy {strict}; this command runs under policy " in line
    assert "(<built-in defaults>)" in line
    assert home.audit("decided") == []
    [refused] = home.audit("refused")
    assert (refused["actor"], refused["why"], refused["os_user"]) == (
        "U0BOB", "other_policy", getpass.getuser(),
    )  # fmt: skip
    assert refused["requested_under"] == strict != refused["deciding_under"]

    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))  # the bot's policy
    code, out, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "checked", "--digest", digest,
    )  # fmt: skip
    assert code == 0, err
    assert f"run {run_id} is completed" in out
    [decided] = home.audit("decided")
    assert (decided["actor"], decided["via"], decided["os_user"]) == (
        "U0ALICE", "cli", getpass.getuser(),
    )  # fmt: skip


def _sqlite_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_show_says_how_long_a_call_waits_and_waited_until_its_decision(home: Home) -> None:
    _, [approval] = home.paused("restart api")
    asked = datetime.now(UTC) - timedelta(hours=2, minutes=5, seconds=1)
    with raw_database(home.db) as connection:
        connection.execute(
            "UPDATE approvals SET created_at = ? WHERE approval_id = ?",
            (_sqlite_time(asked), approval.approval_id),
        )
    code, out, _ = home.cli("approvals", "show", approval.approval_id)
    assert code == 0
    assert "  waited:    2 h 5 min so far" in out.splitlines()

    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--reject", "--as", "U0ALICE",
        "--reason", "not now", "--digest", approval.arguments_digest,
    )  # fmt: skip
    assert code == 0, err
    decided = home.store(lambda store: store.get_approval(approval.approval_id))
    assert decided is not None
    assert decided.decided_at is not None
    with raw_database(home.db) as connection:  # asked exactly 1 d 3 h before the decision
        connection.execute(
            "UPDATE approvals SET created_at = ? WHERE approval_id = ?",
            (_sqlite_time(decided.decided_at - timedelta(days=1, hours=3)), approval.approval_id),
        )
    code, out, _ = home.cli("approvals", "show", approval.approval_id)
    assert "  waited:    1 d 3 h until rejected" in out.splitlines()
    code, out, _ = home.cli("approvals", "show", approval.approval_id, "--json")
    assert json.loads(out)["waited_seconds"] == 97200.0


def test_show_and_decide_never_use_a_snapshot_rewritten_in_the_database(home: Home) -> None:
    _, [approval] = home.paused("restart api")
    with raw_database(home.db) as connection:  # no keys: what someone with the file can do
        connection.execute(
            "UPDATE approvals SET snapshot = replace(snapshot, '\"api\"', '\"api-canary\"') "
            "WHERE approval_id = ?",
            (approval.approval_id,),
        )

    code, out, _ = home.cli("approvals", "show", approval.approval_id)
    assert code == 0
    assert "api-canary" not in out
    assert "failed its seal" in out
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "canary only", "--digest", approval.arguments_digest,
    )  # fmt: skip
    assert code != 0
    assert "failed its seal" in err
    assert home.effect_lines() == []
    [tampered] = home.audit("tamper_detected")
    assert (tampered["purpose"], tampered["via"]) == ("snapshot_seal", "cli")


def test_approve_with_a_window_from_the_cli_covers_the_next_matching_call(home: Home) -> None:
    policy = home.path / "policy.toml"
    policy.write_text(
        '[tools.restart_service]\nallow_window = "2h"\nwindow_match = ["service"]\n',
        encoding="utf-8",
    )
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    _, [first] = home.paused("restart api")
    code, out, _ = home.cli("approvals", "show", first.approval_id, "--as", "U0ALICE")
    assert "approve it with a window (2 h, equal service, --window)" in out

    code, out, err = home.cli(
        "approvals", "decide", first.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "api restarts today", "--digest", first.arguments_digest, "--window",
    )  # fmt: skip
    assert code == 0, err
    assert "it opened an approval window until" in out
    [opened] = home.audit("window_opened")
    assert opened["actor"] == "U0ALICE"

    code, out, err = home.cli("demo", "restart api")  # covered: runs with nobody asked
    assert code == 0, err
    assert "within U0ALICE's approval window" in out
    _, [other] = home.paused("restart web")  # another service: asked again
    assert other.tool_name == "restart_service"
    assert len(home.effect_lines()) == 2


def test_a_window_the_policy_does_not_allow_is_refused_from_the_cli(home: Home) -> None:
    _, [approval] = home.paused("restart api")
    code, _, err = home.cli(
        "approvals", "decide", approval.approval_id, "--approve", "--as", "U0ALICE",
        "--reason", "r", "--digest", approval.arguments_digest, "--window",
    )  # fmt: skip
    assert code == 2
    assert "allow_window" in err
    assert home.effect_lines() == []
    [refused] = home.audit("refused")
    assert refused["why"] == "window_not_allowed"
