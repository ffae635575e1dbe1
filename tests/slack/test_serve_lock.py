"""Two `approvals-bot serve` processes on one SQLite file: the second is refused with
one clear line and a non-zero exit, and touches nothing; once the first is gone (even
killed) a new one starts. `db copy` is refused the same way while a server holds the
file, and copies once it stopped, telling each table on stderr."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from store.copy import TABLES
from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import serve_env, start_serve
from tests.store.postgres_db import fresh_postgres_database

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


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


async def approvals_bot(env: Mapping[str, str], *argv: str) -> tuple[int, str, list[str]]:
    """Run `approvals-bot ARGV` as a process to its end, nothing on its stdin: (exit
    code, stdout, stderr lines)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *argv, env=dict(env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode().splitlines()


async def test_db_copy_is_refused_while_a_server_holds_the_file_and_copies_after(
    fake_slack: FakeSlack, tmp_path: Path, postgres_url: str
) -> None:
    env = serve_env(fake_slack, tmp_path)
    code, _, lines = await approvals_bot(env, "demo", "restart api")  # left paused
    assert code == 2, lines
    served = await start_serve(env)
    try:
        code, out, lines = await approvals_bot(env, "db", "copy", "--to", postgres_url)
        assert (code, out) == (2, "")
        assert len(lines) == 1, lines
        assert f"pid {served.process.pid}" in lines[0]
        assert f"cannot copy {tmp_path / 'approvals.db'} while an approvals-bot server" in lines[0]
    finally:
        await served.stop()

    code, out, lines = await approvals_bot(env, "db", "copy", "--to", postgres_url)

    assert code == 0, lines
    assert [line.partition(":")[0] for line in lines] == [f"copied {t}" for t, _ in TABLES]
    assert "copied runs: 1 row(s)" in lines
    assert "copied approvals: 1 row(s)" in lines
    assert "audit chain verified on the copy" in out
