"""What the operator CLI tests share: a home directory with its own environment, the
real `approvals-bot` entry point (bot.cli.main) on a real SQLite file, and helpers that
put runs in the states the commands act on."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import subprocess
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot.cli import main
from store import SqliteStore, open_store
from store.postgres.store import PostgresStore
from store.records import ApprovalRecord

T = TypeVar("T")
OPS_TOKEN = "xoxb-2718281828-operator-token-never-stored"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Home:
    """A working directory with a clean environment and the demo's database in it."""

    path: Path
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    @property
    def db(self) -> Path:
        return self.path / "approvals.db"

    @property
    def effects(self) -> Path:
        return self.path / "effects.jsonl"

    def cli(self, *argv: str, stdin: str = "") -> tuple[int, str, str]:
        """Run `approvals-bot ARGV` in this process; (exit code, stdout, stderr)."""
        self.capsys.readouterr()
        self.monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line]

    def paused(self, task: str = "restart api") -> tuple[str, list[ApprovalRecord]]:
        """A demo run left paused at the prompt (no answer on stdin): its id and its
        pending approvals."""
        code, _, err = self.cli("demo", task)
        assert code == 2, err
        assert "no decision on standard input" in err
        runs = self.store(lambda store: store.list_runs(status="paused"))
        run_id = runs[0].run_id
        pending = self.store(lambda store: store.list_approvals(run_id=run_id, status="pending"))
        return run_id, pending

    def store(self, work: Callable[[SqliteStore | PostgresStore], Coroutine[Any, Any, T]]) -> T:
        """Do `work` on the database with the store, outside any command."""

        async def body() -> T:
            store = await open_store(str(self.db))
            try:
                return await work(store)
            finally:
                await store.close()

        return asyncio.run(body())

    def audit(self, kind: str) -> list[dict[str, Any]]:
        events = self.store(lambda store: store.audit_events())
        return [{"actor": e.actor, **e.detail} for e in events if e.kind == kind]


@pytest.fixture
def home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Home:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("APPROVALS_", "OPS_", "SLACK_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("APPROVALS_DEMO_EFFECTS", str(tmp_path / "effects.jsonl"))
    monkeypatch.setenv("OPS_API_TOKEN", OPS_TOKEN)
    return Home(path=tmp_path, capsys=capsys, monkeypatch=monkeypatch)


def subprocess_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for `python -m bot` in `home`, with the examples importable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("APPROVALS_", "OPS_", "SLACK_", "OPENAI_"))
    }
    env.update(
        APPROVALS_DATABASE_URL=str(home / "approvals.db"),
        APPROVALS_DEMO_EFFECTS=str(home / "effects.jsonl"),
        OPS_API_TOKEN=OPS_TOKEN,
        PYTHONPATH=str(REPO),
        **extra,
    )
    return env


def at_a_terminal(home: Path, argv: list[str], answer: bytes) -> tuple[int, str, str]:
    """`python -m bot ARGV` in `home` with a real pty as stdin, answering `answer` once it
    asks `[y/N]`: (exit code, stdout with the question, stderr)."""
    main_fd, child_fd = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", *argv], cwd=home, env=subprocess_env(home),
            stdin=child_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        os.close(child_fd)
        assert process.stdout is not None
        shown = b""
        while b"[y/N]" not in shown:
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, shown
            shown += chunk
        os.write(main_fd, answer)
        out, err = process.communicate(timeout=60)
    finally:
        os.close(main_fd)
    return process.returncode, (shown + out).decode(), err.decode()
