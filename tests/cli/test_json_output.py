"""`--json` on the commands that list, show, verify and check: one JSON document on
stdout holding what the text shows (paging lines go to stderr), for scripts."""

from __future__ import annotations

import json
import shlex
import sqlite3
from contextlib import closing

from tests.cli.operator_support import REPO, Home


def as_json(home: Home, *argv: str, code: int = 0) -> object:
    got, out, err = home.cli(*argv, "--json")
    assert got == code, err
    return json.loads(out)


def test_approvals_list_and_its_status_filter(home: Home) -> None:
    _, [first] = home.paused("restart api")
    _, [second] = home.paused("restart web")
    home.cli("approvals", "revoke", second.approval_id, "--as", "U0ALICE", "--reason", "no")

    pending = as_json(home, "approvals", "list")
    assert isinstance(pending, list)
    assert [row["approval_id"] for row in pending] == [first.approval_id]
    assert pending[0]["snapshot"]["tool_name"] == "restart_service"  # the redacted snapshot
    assert pending[0]["status"] == "pending"

    revoked = as_json(home, "approvals", "list", "--status", "revoked")
    assert isinstance(revoked, list)
    assert [(row["approval_id"], row["revoked_by"]) for row in revoked] == [
        (second.approval_id, "U0ALICE")
    ]
    code, text, _ = home.cli("approvals", "list", "--status", "revoked")
    assert code == 0
    assert second.approval_id in text
    assert first.approval_id not in text


def test_approvals_list_pages_with_the_more_line_on_stderr(home: Home) -> None:
    for task in ("restart api", "restart web"):
        home.paused(task)
    code, out, err = home.cli("approvals", "list", "--limit", "1", "--json")
    assert code == 0
    assert len(json.loads(out)) == 1
    assert err.startswith("-- more: approvals-bot approvals list --limit 1 --after ")
    code, rest, _ = home.cli(*shlex.split(err.strip().removeprefix("-- more: "))[1:])
    assert code == 0
    assert len(json.loads(rest)) == 1


def test_after_goes_with_the_pending_list_only(home: Home) -> None:
    code, _, err = home.cli("approvals", "list", "--status", "approved", "--after", "x")
    assert code == 2
    assert "--after pages the pending approvals" in err


def test_approvals_show(home: Home) -> None:
    _, [approval] = home.paused("restart api")
    shown = as_json(home, "approvals", "show", approval.approval_id, "--as", "demo-requester")
    assert isinstance(shown, dict)
    assert shown["approval"]["approval_id"] == approval.approval_id
    assert (shown["approvals_count"], shown["required"], shown["voters"]) == (0, 1, [])
    assert shown["viewer"]["id"] == "demo-requester"
    assert shown["viewer"]["can_decide"] is False
    assert "someone else" in shown["viewer"]["why_not"]
    assert [event["kind"] for event in shown["trail"]] == ["requested"]


def test_audit_verify(home: Home) -> None:
    home.paused("restart api")
    verified = as_json(home, "audit", "verify")
    assert isinstance(verified, dict)
    assert verified["ok"] is True
    assert verified["checked"] == verified["head"]["seq"] > 0
    with closing(sqlite3.connect(home.db, isolation_level=None)) as connection:
        connection.execute("DROP TRIGGER audit_events_no_update")
        connection.execute("UPDATE audit_events SET actor = 'mallory' WHERE seq = 1")
    broken = as_json(home, "audit", "verify", code=1)
    assert isinstance(broken, dict)
    assert (broken["ok"], broken["first_bad_seq"], broken["problem"]) == (False, 1, "edited")


def test_policy_check(home: Home) -> None:
    checked = as_json(home, "policy", "check", str(REPO / "examples" / "policy.toml"), code=2)
    assert checked == {
        "ok": False,
        "source": str(REPO / "examples" / "policy.toml"),
        "problems": [
            "tools.refund: no agent has a tool named 'refund' (tools: deploy_release, "
            "get_status, restart_service, set_config)"
        ],
    }
    policy = home.path / "policy.toml"
    policy.write_text(
        'admins = ["U0SEC"]\n[tools.deploy_release]\napprovers = ["S0REL"]\n'
        'required_approvals = 2\nexpires_after = "2h"\n',
        encoding="utf-8",
    )
    good = as_json(home, "policy", "check", str(policy))
    assert isinstance(good, dict)
    assert (good["ok"], good["admins"]) == (True, ["U0SEC"])
    assert good["tools"]["deploy_release"] == {
        "approvers": ["S0REL"],
        "required_approvals": 2,
        "allow_self_approval": False,
        "require_reason": True,
        "expires_after": "2h",
        "remind_before": "1h",
        "allow_always": False,
        "allow_window": None,
        "window_match": [],
        "mode": "approve",
        "routing": {
            "notify": "channel",
            "max_dms": 10,
            "escalation": [],
            "notify_requester": "thread",
        },
    }
    assert good["defaults"]["expires_after"] == "1d"
    assert "restart_service" in good["under_defaults"]
    assert good["limits"] == {
        "tool_calls_per_turn": 20,
        "pending_approvals_per_run": 20,
        "task_chars": 4000,
    }


def test_the_readme_documents_each_json_flag() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for command in (
        "approvals list",
        "approvals show",
        "audit verify",
        "policy check",
        "runs list",
        "runs show",
    ):
        [line] = [
            line for line in readme.splitlines() if line.startswith(f"approvals-bot {command}")
        ]
        assert "--json" in line, line
