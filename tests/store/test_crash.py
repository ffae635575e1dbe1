"""Crash safety: a writer process is SIGKILLed at many points; after each kill the file
passes integrity_check, every transition is whole, and the audit chain verifies."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from store import open_store
from store.keys import format_key, generate_key
from tests.store.store_helpers import raw

WRITER = "tests.store.crash_writer"
ROUNDS = 12
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def kill_after(db_path: Path, round_number: int, lines: int, env: dict[str, str]) -> None:
    """Start a writer, wait for `lines` progress lines, SIGKILL it mid-work."""
    writer = subprocess.Popen(
        [sys.executable, "-m", WRITER, str(db_path), str(round_number)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=PROJECT_ROOT,
        text=True,
    )
    assert writer.stdout is not None
    try:
        for _ in range(lines):
            line = writer.stdout.readline()
            assert line, f"writer exited early with code {writer.poll()}"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL


async def check_consistent(db_path: Path, env: dict[str, str]) -> int:
    store = await open_store(str(db_path), environ=env)
    try:
        verification = await store.verify_audit()
        assert verification.ok, verification
        events = await store.audit_events()
        requested = Counter(e.approval_id for e in events if e.kind == "requested")
        decided = Counter(e.approval_id for e in events if e.kind == "decided")
        for approval in await store.list_approvals(limit=100_000):
            assert requested[approval.approval_id] == 1
            expected_decided = 0 if approval.status == "pending" else 1
            assert decided[approval.approval_id] == expected_decided, approval
        for run in await store.list_runs(limit=100_000):
            state = json.loads(await store.load_run_state(run.run_id))
            saved_status = "running" if run.version == 1 else "paused"
            assert state["status"] == saved_status, (run, state["status"])
        for entry in await store.ledger_entries(state="succeeded", limit=100_000):
            claim = await store.ledger_claim(
                execution_key=entry.execution_key, arguments_digest="d", run_id=entry.run_id,
                tool_call_id="a", tool_name="deploy", owner="checker", lease_seconds=1,
            )  # fmt: skip
            assert getattr(claim, "result", None) == f"result-{entry.run_id}"
        return verification.checked
    finally:
        await store.close()


def test_sigkilled_writer_leaves_no_half_transition(tmp_path: Path) -> None:
    db_path = tmp_path / "crash.db"
    env = {
        **os.environ,
        "APPROVALS_KEYS": format_key(generate_key("crash")),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    env.pop("APPROVALS_DATABASE_URL", None)
    checked = 0
    for round_number in range(ROUNDS):
        kill_after(db_path, round_number, lines=1 + round_number * 5, env=env)
        with raw(db_path) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        now_checked = asyncio.run(check_consistent(db_path, env))
        assert now_checked >= checked
        checked = now_checked
    assert checked > ROUNDS * 5  # the writers got real work done before dying
