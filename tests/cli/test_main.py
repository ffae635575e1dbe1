"""The `approvals-bot` entry point itself: help, errors mapped to one line, pipes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from store import open_store


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    for command in ("demo", "keys", "audit", "runs", "db", "serve", "socket"):
        assert command in out


def test_our_errors_become_one_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.db"
    assert main(["runs", "list", "--db", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("approvals-bot: error: ")
    assert not missing.exists()  # bad input changes nothing


async def _fill_audit_log(db: Path, events: int) -> None:
    store = await open_store(str(db))
    try:
        for index in range(events):
            await store.append_audit("note", actor="U1", detail={"n": index, "pad": "x" * 200})
    finally:
        await store.close()


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    # `approvals-bot audit export | head -1` must not end in a BrokenPipeError traceback.
    # The log must outgrow the pipe buffer (64 KiB) so the writer really meets the EPIPE.
    db = tmp_path / "approvals.db"
    asyncio.run(_fill_audit_log(db, 400))
    export = subprocess.Popen(
        [sys.executable, "-m", "bot", "audit", "export", "--db", str(db)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert export.stdout is not None
    assert export.stderr is not None
    assert export.stdout.readline().startswith(b"{")
    export.stdout.close()  # the reader goes away after one line
    stderr = export.stderr.read().decode()
    export.stderr.close()
    assert export.wait(timeout=60) == 141
    assert "Traceback" not in stderr


def test_help_does_not_load_the_server() -> None:
    # `--help`, `demo` and the operator commands must not pay for aiohttp and Bolt, which
    # only `serve` and `socket` need (bot.commands.serve imports them when they run).
    probe = (
        "import sys; from bot.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('aiohttp', 'slack_bolt', 'slack_sdk', 'bot.slack.surface') "
        "if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert loaded.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("./approvals.db", "./approvals.db"),
        ("sqlite:///srv/bot/approvals.db", "sqlite:///srv/bot/approvals.db"),
        ("postgresql://bot:s3cret@db.internal:5432/ab", "postgresql://bot:***@db.internal:5432/ab"),
    ],
)
def test_the_start_up_line_names_the_database_without_its_password(url: str, shown: str) -> None:
    from bot.commands.serve import without_credentials

    assert without_credentials(url) == shown


def test_an_error_never_echoes_kilobytes_of_what_it_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_fill_audit_log(tmp_path / "approvals.db", 1))
    assert main(["runs", "show", "r" * 20_000, "--db", str(tmp_path / "approvals.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("approvals-bot: error: no run 'rrrr")
    assert err.endswith(" characters)\n")
    assert len(err) < 600
