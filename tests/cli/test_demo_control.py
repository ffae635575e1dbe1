"""The demo as a new user meets it: Ctrl-C at the prompt (a real subprocess and a real
SIGINT), the answers the prompt takes, what it refuses up front, the environment it
honours (policy, agents, approval lifetime), and the examples it runs."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.operator_support import REPO, Home, subprocess_env

PROMPT = b"[a/r] "


def _read_until(process: subprocess.Popen[bytes], needle: bytes, *, seconds: float = 30) -> bytes:
    """What the process printed up to `needle` (polling its pipe with a deadline)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + seconds
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {needle!r} within {seconds} s; got {seen!r}"
        ready, _, _ = select.select([process.stdout], [], [], left)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, f"the process ended before {needle!r}; got {seen!r}"
            seen += chunk
    return seen


def test_ctrl_c_at_the_prompt_quits_at_once_with_one_line(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "demo", "restart api"],
        cwd=tmp_path,
        env=subprocess_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        shown = _read_until(process, PROMPT)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    [approval_id] = re.findall(rb"\(approval ([0-9a-z-]+)\)", shown)
    [run_id] = re.findall(rb"^run ([0-9a-f]{32}) ", shown, flags=re.M)

    assert process.returncode == 130
    [line] = err.decode().splitlines()
    assert line == (
        f"approvals-bot: interrupted; run {run_id.decode()} stays paused. Decide it later: "
        f"approvals-bot approvals decide {approval_id.decode()} --approve|--reject "
        "--as YOU --reason TEXT"
    )
    # and that command finishes it
    digest = re.search(rb"digest:\s+([0-9a-f]{64})", shown)
    assert digest is not None
    finish = subprocess.run(
        [sys.executable, "-m", "bot", "approvals", "decide", approval_id.decode(), "--approve",
         "--as", "U0ALICE", "--reason", "after lunch", "--digest", digest.group(1).decode()],
        cwd=tmp_path, env=subprocess_env(tmp_path), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert finish.returncode == 0, finish.stderr
    assert "restarted api" in finish.stdout


@pytest.mark.parametrize(
    ("answer", "ran"), [("y", True), ("yes", True), ("Y", True), ("n", False), ("no", False)]
)
def test_the_prompt_takes_yes_and_no(home: Home, answer: str, ran: bool) -> None:
    stdin = f"{answer}\nreason given\n" + ("" if ran else "\n")
    code, out, err = home.cli("demo", "restart api", stdin=stdin)
    assert code == 0, err
    assert len(home.effect_lines()) == (1 if ran else 0)
    assert ("approved by" if ran else "rejected by") in out


def test_an_unknown_task_exits_non_zero_and_stores_nothing(home: Home) -> None:
    code, _, err = home.cli("demo", "make me a sandwich")
    assert code == 2
    assert 'did not understand "make me a sandwich"' in err
    assert "deploy <service> <version>" in err
    assert not home.db.exists()


def test_a_directory_as_state_file_is_refused_up_front(home: Home) -> None:
    code, _, err = home.cli("demo", "restart api", "--approve", "--state", str(home.path))
    assert code == 2
    assert "is a directory" in err
    assert not home.db.exists()
    assert home.effect_lines() == []


def test_the_demo_honours_the_policy_and_the_approval_lifetime(home: Home) -> None:
    policy = home.path / "policy.toml"
    policy.write_text('[tools.restart_service]\napprovers = ["U0ALICE"]\n', encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    code, _, err = home.cli("demo", "restart api", "--approve", "--approver", "U0BOB")
    assert code == 2
    assert "not an approver" in err
    code, _, err = home.cli("demo", "restart api", "--approve", "--approver", "U0ALICE")
    assert code == 0, err

    home.monkeypatch.delenv("APPROVALS_POLICY")
    home.monkeypatch.setenv("APPROVALS_APPROVAL_TTL_SECONDS", "120")
    before = datetime.now(UTC)
    code, out, _ = home.cli("demo", "restart web", "--approve")
    assert code == 0
    [expires] = re.findall(r"expires:\s+(\S+)", out)
    lifetime = datetime.fromisoformat(expires) - before
    assert timedelta(seconds=110) < lifetime <= timedelta(seconds=121)


def test_the_example_agent_and_policy_run_through_the_demo(tmp_path: Path) -> None:
    env = subprocess_env(
        tmp_path,
        APPROVALS_AGENTS="examples.billing:registry",
        APPROVALS_POLICY=str(REPO / "examples" / "policy.toml"),
    )
    command = [sys.executable, "-m", "bot", "demo", "--agent", "billing", "refund order 1042 2500"]

    refused = subprocess.run(
        [*command, "--approve", "--approver", "U0SOMEONE"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    done = subprocess.run(
        [*command, "--approve", "--approver", "U0FINANCE1", "--reason", "customer called"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert refused.returncode == 2
    assert "not an approver" in refused.stderr
    assert done.returncode == 0, done.stderr
    assert "approval needed: refund" in done.stdout
    assert '"cents": 2500' in done.stdout
    assert "refunded 2500 cents on order 1042" in done.stdout.split("answer:", 1)[1]


def test_policy_check_passes_the_example_with_its_agents(tmp_path: Path) -> None:
    def check(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bot", "policy", "check", str(REPO / "examples/policy.toml")],
            cwd=tmp_path, env=subprocess_env(tmp_path, **extra), capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip

    good = check(APPROVALS_AGENTS="examples.billing:registry")
    assert good.returncode == 0, good.stderr
    assert "OK" in good.stdout.splitlines()[0]
    assert "tools.refund: approvers U0FINANCE1, U0FINANCE2" in good.stdout
    assert "for the rest of the run allowed" in good.stdout
    assert "card to both (at most 10 DMs); escalates after 1h to S0ONCALL" in good.stdout
    without_agents = check()
    assert without_agents.returncode == 2
    assert "tools.refund: no agent has a tool named 'refund'" in without_agents.stderr


def test_policy_check_lists_every_problem_at_once(home: Home) -> None:
    bad = home.path / "bad.toml"
    bad.write_text(
        "colour = 'red'\n[defaults]\nexpires_after = 'soon'\n"
        "[tools.restart_service]\nallow_always = true\nrequired_approvals = 2\n"
        "approvers = ['U0ALICE', 'U0BOB']\n[tools.nope]\n",
        encoding="utf-8",
    )
    code, out, err = home.cli("policy", "check", str(bad))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"approvals-bot: error: policy file {bad}: 4 problems:"
    keys = [line.strip().split(":", 1)[0] for line in lines[1:]]
    assert keys == [
        "colour",
        "defaults.expires_after",
        "tools.restart_service.allow_always",
        "tools.nope",
    ]


def test_an_approval_that_expires_at_the_prompt_lets_the_run_go_on(home: Home) -> None:
    home.monkeypatch.setenv("APPROVALS_APPROVAL_TTL_SECONDS", "0.001")  # gone before any answer
    code, out, err = home.cli("demo", "restart api", stdin="y\ntoo late\n")
    assert code == 0, err
    assert "already expired" in err
    assert "Not run: nobody decided before the approval expired." in out
    assert home.effect_lines() == []


def _paused_at(out: str) -> tuple[str, str]:
    """(run id, approval id) of the demo run shown on `out`."""
    [run_id] = re.findall(r"^run ([0-9a-f]{32}) ", out, flags=re.M)
    [approval_id] = re.findall(r"\(approval ([0-9a-z-]+)\)", out)
    return run_id, approval_id


def test_no_answer_on_stdin_says_the_run_stays_paused_and_how_to_finish_it(home: Home) -> None:
    code, out, err = home.cli("demo", "restart api")
    run_id, approval_id = _paused_at(out)
    assert code == 2
    assert err.splitlines() == [
        "approvals-bot: error: no decision on standard input; pass --approve or --reject for "
        "a non-interactive run",
        f"approvals-bot: run {run_id} stays paused. Decide it later: approvals-bot approvals "
        f"decide {approval_id} --approve|--reject --as YOU --reason TEXT",
    ]


def test_a_decision_the_policy_refuses_says_the_run_stays_paused(home: Home) -> None:
    policy = home.path / "policy.toml"
    policy.write_text('[tools.restart_service]\napprovers = ["U0ALICE"]\n', encoding="utf-8")
    home.monkeypatch.setenv("APPROVALS_POLICY", str(policy))
    code, out, err = home.cli(
        "demo", "restart api", "--approve", "--approver", "U0BOB", "--db", str(home.db)
    )
    run_id, approval_id = _paused_at(out)
    assert code == 2
    refused, finish = err.splitlines()
    assert refused == (
        "approvals-bot: error: you are not an approver for this tool (approvers: U0ALICE)"
    )
    assert finish == (
        f"approvals-bot: run {run_id} stays paused. Decide it later: approvals-bot approvals "
        f"decide {approval_id} --approve|--reject --as YOU --reason TEXT --db {home.db}"
    )
    # and that command finishes it, as the approver the policy names
    code, out, _ = home.cli(
        "approvals", "decide", approval_id, "--approve", "--as", "U0ALICE", "--reason", "ok",
        "--digest", re.findall(r"digest:\s+([0-9a-f]{64})", out)[0], "--db", str(home.db),
    )  # fmt: skip
    assert code == 0
    assert "restarted api" in out
