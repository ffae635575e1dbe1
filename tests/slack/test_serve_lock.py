"""Two `approvals-bot serve` processes on one SQLite file: the second is refused with
one clear line and a non-zero exit, and touches nothing; once the first is gone (even
killed) a new one starts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, start_serve

pytestmark = pytest.mark.slow


async def test_a_second_server_on_one_sqlite_file_is_refused(
    fake_slack: FakeSlack, tmp_path: Path
) -> None:
    env = serve_env(fake_slack, tmp_path)
    first = await start_serve(env)
    try:
        second = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(30):
            out, err = await second.communicate()
        lines = err.decode().strip().splitlines()
        assert second.returncode == 2
        assert out == b""
        assert len(lines) == 1, lines
        assert f"pid {first.process.pid}" in lines[0]
        assert f"is serving {tmp_path / 'approvals.db'}" in lines[0]
        assert "SQLite serves one process" in lines[0]
    finally:
        await first.kill()
    again = await start_serve(env)  # the kernel released the dead holder's lock
    await again.stop()
