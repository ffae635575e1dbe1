"""`approvals-bot runs list | cancel | pause | resume | purge`: the real entry point on a
real SQLite file."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime, timedelta

from store.api import Store
from tests.cli.operator_support import Home, at_a_terminal


async def _many_runs(store: Store, count: int) -> None:
    for index in range(count):
        await store.create_run(
            run_id=f"run-{index:04d}",
            agent_name="ops" if index % 2 else "billing",
            agent_version="1",
            schema_version="1.0",
            state_json="{}",
            status="completed",
            requester="U0ALICE" if index < 10 else "U0BOB",
            task=f"task number {index}",
        )


async def _hiding_task(store: Store) -> None:
    await store.create_run(
        run_id="hider-run", agent_name="hider", agent_version="1", schema_version="1.0",
        state_json="{}", status="completed", task="deploy \u202eevil",
    )  # fmt: skip


def test_runs_list_pages_beyond_a_hundred_with_a_more_line(home: Home) -> None:
    home.cli("db", "migrate")
    home.store(lambda store: _many_runs(store, 105))

    code, out, _ = home.cli("runs", "list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 102  # header, 100 runs, the more line
    assert lines[-1].startswith("-- more: approvals-bot runs list --limit 100 --after ")
    code, rest, _ = home.cli(*shlex.split(lines[-1].removeprefix("-- more: "))[1:])
    assert code == 0
    shown = [line.split()[0] for line in lines[1:-1]] + [
        line.split()[0] for line in rest.splitlines()[1:]
    ]
    assert sorted(shown) == [f"run-{index:04d}" for index in range(105)]
    assert "more" not in rest


def test_runs_list_filters_and_shows_the_task_redacted(home: Home) -> None:
    home.paused("set payments db_password=hunter2-very-secret")
    home.store(lambda store: _many_runs(store, 12))

    code, out, _ = home.cli("runs", "list", "--origin", "terminal")
    assert code == 0
    [header, row] = out.splitlines()
    assert "TASK" in header
    assert "db_password=«redacted»" in row
    assert "hunter2" not in out
    home.store(lambda store: _hiding_task(store))
    code, out, _ = home.cli("runs", "list", "--agent", "hider")
    assert "\\u202e" in out  # a right-to-left override shown, not obeyed
    assert "\u202e" not in out
    code, out, _ = home.cli("runs", "list", "--requester", "U0ALICE", "--agent", "billing")
    assert [line.split()[0] for line in out.splitlines()[1:]] == [
        f"run-{index:04d}" for index in (8, 6, 4, 2, 0)
    ]
    code, out, _ = home.cli("runs", "list", "--status", "paused", "--since", "1h")
    assert len(out.splitlines()) == 2
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert home.cli("runs", "list", "--since", future)[1] == "no runs\n"
    code, _, err = home.cli("runs", "list", "--since", "yesterday")
    assert code == 2
    assert "--since 'yesterday'" in err


def test_runs_cancel_closes_everything_and_is_audited(home: Home) -> None:
    run_id, [approval] = home.paused("restart api")

    code, out, err = home.cli("runs", "cancel", run_id, "--reason", "wrong env", "--as", "U0OPS")
    assert code == 0, err
    assert f"approvals closed: {approval.approval_id}" in out
    run = home.store(lambda store: store.get_run(run_id))
    assert run is not None
    assert run.status == "cancelled"
    [cancelled] = home.audit("cancelled")
    assert (cancelled["actor"], cancelled["via"], cancelled["reason"]) == (
        "U0OPS",
        "cli",
        "wrong env",
    )
    assert home.cli("approvals", "list")[1] == "no approvals\n"
    code, _, err = home.cli("runs", "cancel", run_id)
    assert code == 2
    assert "already cancelled" in err
    assert home.cli("audit", "verify")[0] == 0


async def _leave_resuming(store: Store, run_id: str, approval_id: str, digest: str) -> None:
    await store.vote(approval_id, decision="approved", voter="U0ALICE", digest=digest, reason="ok")
    await store.transition_run(run_id, expected_status="paused", new_status="resuming")


def test_runs_resume_finishes_a_run_left_resuming(home: Home) -> None:
    run_id, [approval] = home.paused("restart api")
    code, _, err = home.cli("runs", "resume", run_id)
    assert code == 2
    assert "waiting for 1 decision" in err
    home.store(
        lambda store: _leave_resuming(
            store, run_id, approval.approval_id, approval.arguments_digest
        )
    )

    code, out, err = home.cli("runs", "resume", run_id, "--as", "U0OPS")

    assert code == 0, err
    assert "restarted api" in out
    assert f"run {run_id} is completed" in out
    assert len(home.effect_lines()) == 1
    [asked] = home.audit("resume_requested")
    assert (asked["actor"], asked["via"]) == ("U0OPS", "cli")


def test_runs_pause_holds_a_run_through_its_decision_and_resume_lets_it_go_on(
    home: Home,
) -> None:
    run_id, [approval] = home.paused("restart api")
    code, _, err = home.cli("runs", "pause", run_id, "--reason", " ")
    assert code == 2
    assert "say why the run is paused" in err

    code, out, err = home.cli("runs", "pause", run_id, "--reason", "incident 42", "--as", "U0OPS")
    assert code == 0, err
    assert f"runs resume {run_id}" in out
    code, out, _ = home.cli("runs", "show", run_id)
    assert "paused by U0OPS: incident 42" in out
    home.store(
        lambda store: store.vote(approval.approval_id, decision="approved", voter="U0ALICE",
                                 digest=approval.arguments_digest, reason="ok")
    )  # fmt: skip
    code, _, err = home.cli("runs", "pause", run_id, "--reason", "again")
    assert code == 2
    assert "already paused by U0OPS: incident 42" in err

    code, out, err = home.cli("runs", "resume", run_id, "--as", "U0OPS")

    assert code == 0, err
    assert f"run {run_id} released (paused by U0OPS: incident 42)" in out
    assert f"run {run_id} is completed" in out
    assert len(home.effect_lines()) == 1
    assert [e["via"] for e in home.audit("paused") + home.audit("unpaused")] == ["cli", "cli"]
    assert home.audit("resume_requested") == []  # the release, not the stuck-run path


def test_runs_resume_of_a_paused_run_still_waiting_says_what_it_waits_for(home: Home) -> None:
    run_id, _ = home.paused("restart api")
    assert home.cli("runs", "pause", run_id, "--reason", "look first")[0] == 0

    code, out, err = home.cli("runs", "resume", run_id)

    assert code == 0, err
    assert f"run {run_id} is paused, waiting for 1 decision(s)" in out
    assert home.effect_lines() == []
    run = home.store(lambda store: store.get_run(run_id))
    assert run is not None
    assert run.held is False


def test_runs_purge_keeps_the_audit_chain_and_records_itself(home: Home) -> None:
    code, _, _ = home.cli("demo", "deploy payments 1.2.3", "--approve", "--reason", "ok")
    assert code == 0
    [run] = home.store(lambda store: store.list_runs())

    code, out, _ = home.cli("runs", "purge", "--finished-before", "90d")
    assert code == 0
    assert "purged 0 run(s)" in out
    code, out, _ = home.cli("runs", "purge", "--finished-before", "0s", "--as", "U0OPS")
    assert code == 0
    assert "purged 1 run(s)" in out
    assert "1 state blob(s), 1 ledger result(s), 1 review snapshot(s)" in out

    code, _, err = home.cli("runs", "show", run.run_id, "--state")
    assert code == 2
    assert "purged" in err
    code, shown, _ = home.cli("runs", "show", run.run_id)
    assert "purged" in shown
    assert "payments" not in shown.split("approvals", 1)[1]  # the snapshot is gone
    code, out, _ = home.cli("audit", "verify")
    assert code == 0
    [purged] = home.audit("purged")
    assert (purged["actor"], purged["runs"]) == ("U0OPS", [run.run_id])
    code, _, err = home.cli("runs", "purge", "--finished-before", "soon")
    assert code == 2
    assert "--finished-before 'soon'" in err


def test_runs_purge_dry_run_counts_what_would_go_and_changes_nothing(home: Home) -> None:
    code, _, _ = home.cli("demo", "deploy payments 1.2.3", "--approve", "--reason", "ok")
    assert code == 0
    before = home.store(lambda store: store.audit_head())
    code, out, _ = home.cli("runs", "purge", "--finished-before", "0s", "--dry-run")
    assert code == 0
    assert out.startswith("would purge 1 run(s) finished before ")
    assert out.endswith(
        ": 1 state blob(s), 1 ledger result(s), 1 review snapshot(s); nothing was changed\n"
    )
    [run] = home.store(lambda store: store.list_runs())
    assert run.purged_at is None
    assert home.store(lambda store: store.audit_head()) == before  # not even audited
    assert home.cli("runs", "show", run.run_id, "--state")[0] == 0


def _purge_at_a_terminal(home: Home, answer: bytes) -> tuple[int, str, str]:
    return at_a_terminal(home.path, ["runs", "purge", "--finished-before", "0s"], answer)


def test_runs_purge_at_a_terminal_asks_first(home: Home) -> None:
    code, _, _ = home.cli("demo", "deploy payments 1.2.3", "--approve", "--reason", "ok")
    assert code == 0

    code, out, err = _purge_at_a_terminal(home, b"n\n")
    assert code == 2
    assert out.startswith("would purge 1 run(s) finished before ")
    assert "purge them? The content of 1 run(s) cannot be brought back [y/N]" in out
    assert err == "approvals-bot: error: not confirmed; nothing was purged\n"
    assert home.audit("purged") == []

    code, out, err = _purge_at_a_terminal(home, b"y\n")
    assert code == 0, err
    assert "purged 1 run(s)" in out
    assert len(home.audit("purged")) == 1
