"""`approvals-bot db copy --to postgresql://...`: everything a SQLite database holds moves
to an empty Postgres database, opens there with the same keys, and its audit chain
verifies; a database in use is refused and left as it was."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.runtime.journal import Recorded
from store import open_store
from store.api import Store
from store.config import parse_postgres_url
from store.crypto import KeyRing
from store.keys import format_key, key_file_for
from store.records import EscalationPlan, NewCopy
from tests.store.postgres_db import fresh_postgres_database
from tests.store.store_helpers import DIGEST, make_run, new_approval

FAR = datetime(2099, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


async def _fill(store: Store) -> None:
    """A bit of everything: runs and states, approvals decided by vote, a full read, a
    standing decision, a window, an absence with its stand-in, an escalation step, a card's copy in
    a direct message, a ledger result, plain audit events."""
    await make_run(store, "run-1", state='{"n": 1, "secret": "OPS-7"}')
    await make_run(store, "run-2")
    escalating = replace(
        new_approval("run-2", "c1"),
        escalations=(EscalationPlan(step=1, due_at=FAR, approvers=("S0ONCALL",)),),
    )
    await store.add_approvals([new_approval("run-1", "c1"), escalating])
    await store.set_stand_in("U1", stand_in="U2", until=FAR)
    await store.plan_copies("ap-run-2-c1", [NewCopy(recipient="U3")], claim_until=FAR)
    await store.copy_posted("ap-run-2-c1", "U3", channel="D0U3", ts="1.1")
    await store.record_full_read("ap-run-1-c1", reader="U1", digest=DIGEST)
    await store.vote("ap-run-1-c1", decision="approved", voter="U1", digest=DIGEST, reason="ok")
    await store.add_standing_decision("ap-run-1-c1")
    await store.open_window(
        "ap-run-1-c1", match_fields=("service",), match_values='{"service":"api"}', lasts=HOUR
    )
    claim = await store.ledger_claim(
        execution_key="run-1:c1", arguments_digest=DIGEST, run_id="run-1", tool_call_id="c1",
        tool_name="deploy_release", owner="w1", lease_seconds=60,
    )  # fmt: skip
    await store.ledger_record_result(
        execution_key="run-1:c1", lease_token=claim.lease_token, result="deployed",  # type: ignore[union-attr]
        is_error=False,
    )  # fmt: skip
    await store.append_audit("note", actor="ops", detail={"ünïcode": "✓"})


async def _snapshot(url: str, keyring: KeyRing) -> tuple[object, ...]:
    """What a store shows of everything _fill wrote, and that its chain verifies."""
    store = await open_store(url, keyring=keyring, environ={})
    try:
        return (
            await store.list_runs(), await store.list_approvals(), await store.audit_events(),
            await store.votes(["ap-run-1-c1"]), await store.standing_decisions("run-1"),
            await store.ledger_entries(), await store.audit_head(),
            (await store.verify_audit()).ok, await store.stand_ins_of(["U1"], at=FAR - HOUR),
            await store.escalations("ap-run-2-c1"), await store.approval_copies("ap-run-2-c1"),
            await store.get_window("ap-run-1-c1"),
            await store.window_matches("ap-run-1-c1", match_values='{"service":"api"}'),
        )  # fmt: skip
    finally:
        await store.close()


async def _opens_and_reuses(url: str, keyring: KeyRing) -> None:
    store = await open_store(url, keyring=keyring, environ={})
    try:
        assert await store.load_run_state("run-1") == '{"n": 1, "secret": "OPS-7"}'
        assert await store.has_read_in_full("ap-run-1-c1", reader="U1", digest=DIGEST)
        reused = await store.ledger_claim(
            execution_key="run-1:c1", arguments_digest=DIGEST, run_id="run-1",
            tool_call_id="c1", tool_name="deploy_release", owner="w2", lease_seconds=60,
        )  # fmt: skip
        assert reused == Recorded(result="deployed", is_error=False)
    finally:
        await store.close()


async def _with_run(url: str, keyring: KeyRing | None, run_id: str) -> None:
    store = await open_store(url, keyring=keyring, environ={})
    try:
        await make_run(store, run_id)
    finally:
        await store.close()


async def _filled(url: str, keyring: KeyRing) -> None:
    store = await open_store(url, keyring=keyring, environ={})
    try:
        await _fill(store)
    finally:
        await store.close()


def test_copy_moves_everything_and_the_chain_verifies_there(
    db_path: Path, keyring: KeyRing, postgres_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("APPROVALS_KEYS", ",".join(format_key(key) for key in keyring))
    asyncio.run(_filled(str(db_path), keyring))
    expected = asyncio.run(_snapshot(str(db_path), keyring))

    assert main(["db", "copy", "--db", str(db_path), "--to", postgres_url]) == 0

    out, err = capsys.readouterr()
    assert "audit chain verified on the copy" in out
    assert err.splitlines() == [
        f"copied {table}: {rows} row(s)"
        for table, rows in [
            ("runs", 2), ("run_blobs", 2), ("approvals", 2), ("approval_votes", 1),
            ("approval_full_reads", 1), ("standing_decisions", 1), ("approval_windows", 1),
            ("stand_ins", 1),
            ("approval_escalations", 1), ("approval_copies", 1), ("ledger", 1),
            ("audit_events", len(expected[2])),  # type: ignore[arg-type]
        ]
    ]  # fmt: skip
    assert asyncio.run(_snapshot(postgres_url, keyring)) == expected
    asyncio.run(_opens_and_reuses(postgres_url, keyring))


def test_a_target_in_use_is_refused_and_left_alone(
    db_path: Path, keyring: KeyRing, postgres_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("APPROVALS_KEYS", ",".join(format_key(key) for key in keyring))
    asyncio.run(_with_run(str(db_path), keyring, "run-1"))
    asyncio.run(_with_run(postgres_url, keyring, "their-run"))
    before = asyncio.run(_snapshot(postgres_url, keyring))

    assert main(["db", "copy", "--db", str(db_path), "--to", postgres_url]) == 2

    assert "is not empty (its runs table has rows)" in capsys.readouterr().err
    assert asyncio.run(_snapshot(postgres_url, keyring)) == before


def test_the_copy_says_which_keys_to_carry_and_a_missing_key_points_to_them(
    db_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """With the keys in the key file beside the SQLite source, the copy says to carry
    that file over; the copy opened without them points to it, never to making new keys;
    the read-only commands work there meanwhile; with the keys carried over, all is read."""
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    asyncio.run(_with_run(str(db_path), None, "run-1"))  # the key file is made beside it
    key_file = key_file_for(db_path)
    [key_id] = [line.split(":")[0] for line in key_file.read_text().splitlines()]

    assert main(["db", "copy", "--db", str(db_path), "--to", postgres_url]) == 0
    carry = capsys.readouterr().out.splitlines()[-1]
    assert carry == (
        f"carry the keys over: the copy is sealed with key id(s) {key_id}, in {key_file}: run "
        f'the bot on {parse_postgres_url(postgres_url).display} with APPROVALS_KEYS="$(paste '
        f'-sd, {key_file})"'
    )

    assert main(["runs", "list", "--db", postgres_url]) == 0  # in clear: no key needed
    assert "run-1" in capsys.readouterr().out
    assert main(["audit", "verify", "--db", postgres_url]) == 0
    assert "audit log OK" in capsys.readouterr().out
    assert main(["runs", "show", "run-1", "--state", "--db", postgres_url]) == 2
    err = capsys.readouterr().err
    assert f"holds data sealed with key id(s) {key_id} and APPROVALS_KEYS is not set" in err
    assert "paste -sd, approvals.db.key" in err
    assert "keys generate" not in err

    command = carry.rsplit(" with ", 1)[1]  # the line's own command
    keys = subprocess.run(
        ["bash", "-c", f'{command} && printf %s "$APPROVALS_KEYS"'],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    monkeypatch.setenv("APPROVALS_KEYS", keys)
    assert main(["runs", "show", "run-1", "--state", "--db", postgres_url]) == 0
    assert '"n": 1' in capsys.readouterr().out


def test_a_sqlite_copy_without_its_key_file_says_to_copy_the_source_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    source, target = tmp_path / "approvals.db", tmp_path / "moved" / "approvals.db"
    target.parent.mkdir()
    asyncio.run(_with_run(str(source), None, "run-1"))

    assert main(["db", "copy", "--db", str(source), "--to", str(target)]) == 0
    carry = capsys.readouterr().out.splitlines()[-1]
    assert carry.endswith(
        f"in {key_file_for(source)}: copy it beside the copy "
        f"(cp -p {key_file_for(source)} {key_file_for(target)}, mode 0600)"
    )
    assert not key_file_for(target).exists()

    assert main(["runs", "list", "--db", str(target)]) == 0
    assert "run-1" in capsys.readouterr().out
    assert not key_file_for(target).exists()  # a read-only command mints no key
    assert main(["runs", "show", "run-1", "--state", "--db", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"its key file {key_file_for(target)} is missing" in err
    assert "needs the key file of the database it was copied from" in err
    assert main(["audit", "verify", "--db", str(target)]) == 0
    assert main(["audit", "export", "--db", str(target)]) == 0
    assert "tamper_detected" not in capsys.readouterr().out  # a missing key is no tampering

    shutil.copy2(key_file_for(source), key_file_for(target))
    assert main(["runs", "show", "run-1", "--state", "--db", str(target)]) == 0
