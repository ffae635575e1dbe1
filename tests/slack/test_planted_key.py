"""A key id no ring has, planted on a finished run's row, stops nothing: the server and
the operator commands start (start-up checks the keys the runs not finished need), and
`audit verify` and `doctor` report the row as tampering."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiohttp
import pytest

from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, serving
from tests.slack.test_serve_lock import approvals_bot

pytestmark = pytest.mark.slow


async def test_a_key_id_planted_on_a_finished_run_is_tampering_not_a_missing_key(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path)
    code, _, lines = await approvals_bot(
        env, "demo", "deploy payments 1.2.3", "--approve", "--reason", "CR-42"
    )
    assert code == 0, lines
    with sqlite3.connect(tmp_path / "approvals.db") as connection:
        [(run_id, status)] = connection.execute("SELECT run_id, status FROM runs").fetchall()
        assert status == "completed"
        connection.execute("UPDATE approvals SET seal_key_id = 'evil'")

    code, out, lines = await approvals_bot(env, "runs", "list")
    assert code == 0, lines
    assert run_id in out
    async with serving(env) as served, aiohttp.ClientSession() as session:
        probe = served.url.removesuffix("/slack/events") + "/readyz"
        async with session.get(probe) as reply:
            assert (reply.status, await reply.json()) == (200, {"ready": True})

    code, out, lines = await approvals_bot(env, "audit", "verify")
    assert code == 1, (out, lines)
    assert "audit log OK" in out
    assert (
        f"sealed data TAMPERED: 1 row(s) name a key id the key ring lacks (planted, or a key "
        f"dropped before rotation reached them): request seal of run {run_id} (completed) "
        "names key id 'evil'"
    ) in out

    code, out, _ = await approvals_bot(env, "doctor")
    assert code == 1
    [keys] = [line for line in out.splitlines() if line[6:].startswith("keys:")]
    assert keys.startswith("FAIL")
    assert "tampering: rows no open run needs name key id(s) evil" in keys
