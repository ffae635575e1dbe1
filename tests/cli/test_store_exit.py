"""A program that forgets to close its store still exits: the store's connection threads
are daemon threads, so an exception (or a plain return) is not followed by a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EXIT_DEADLINE_SECONDS = 30  # generous for a busy CI machine; a hang never ends at all

OPENS_AND_RAISES = """
import asyncio, sys
from store import open_store

async def main() -> None:
    store = await open_store(sys.argv[1])
    await store.append_audit("revealed", actor="exit-test", detail={"step": "before"})
    raise RuntimeError("failure after opening the store")

asyncio.run(main())
"""

OPENS_AND_RETURNS = """
import asyncio, sys
from store import open_store

async def main() -> None:
    await open_store(sys.argv[1])
    print("returned without closing")

asyncio.run(main())
"""


def _run_until_exit(script: str, database: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("APPROVALS_")}
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(database)],
        env=env,
        cwd=database.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=EXIT_DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"the process did not exit within {EXIT_DEADLINE_SECONDS}s (a live thread)")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_an_exception_with_an_open_store_ends_the_process(tmp_path: Path) -> None:
    database = tmp_path / "approvals.db"
    done = _run_until_exit(OPENS_AND_RAISES, database)
    assert done.returncode == 1
    assert "RuntimeError: failure after opening the store" in done.stderr
    # the committed audit event survived the unclean exit and the file opens again
    again = _run_until_exit(
        """
import asyncio, sys
from store import open_store

async def main() -> None:
    store = await open_store(sys.argv[1])
    try:
        events = await store.audit_events()
        print([event.kind for event in events])
    finally:
        await store.close()

asyncio.run(main())
""",
        database,
    )
    assert again.returncode == 0, again.stderr
    assert "'revealed'" in again.stdout


def test_returning_without_closing_the_store_ends_the_process(tmp_path: Path) -> None:
    done = _run_until_exit(OPENS_AND_RETURNS, tmp_path / "approvals.db")
    assert done.returncode == 0, done.stderr
    assert "returned without closing" in done.stdout
