"""The operator CLI on real databases, one of them made by `approvals-bot demo`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from store import open_store
from store.keys import key_file_for
from tests.store.store_helpers import raw

SLACK_TOKEN = "xoxb-1234567890-abcdefghijklmnop"


@pytest.fixture
def demo_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    monkeypatch.delenv("APPROVALS_DATABASE_URL", raising=False)
    db = tmp_path / "approvals.db"
    code = main(
        ["demo", "deploy payments 1.2.3", "--approve", "--reason", "CR-42", "--db", str(db)]
    )
    assert code == 0
    capsys.readouterr()
    return db


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def only_run_id(capsys: pytest.CaptureFixture[str], db: Path) -> str:
    code, out, _ = cli(capsys, "runs", "list", "--db", str(db), "--json")
    assert code == 0
    (run,) = json.loads(out)
    return str(run["run_id"])


def test_runs_list_and_show_on_a_demo_database(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = only_run_id(capsys, demo_db)
    code, table, _ = cli(capsys, "runs", "list", "--db", str(demo_db), "--status", "completed")
    assert code == 0
    assert run_id in table
    assert "STATUS" in table
    assert cli(capsys, "runs", "list", "--db", str(demo_db), "--status", "paused")[1] == "no runs\n"

    code, out, _ = cli(capsys, "runs", "show", run_id, "--db", str(demo_db), "--json")
    detail = json.loads(out)
    assert detail["run"]["status"] == "completed"
    (approval,) = detail["approvals"]
    assert (approval["status"], approval["reason"]) == ("approved", "CR-42")
    assert [entry["state"] for entry in detail["ledger"]] == ["succeeded"]
    assert "state" not in detail

    code, text, _ = cli(capsys, "runs", "show", run_id, "--db", str(demo_db), "--state")
    assert code == 0
    assert "approved by" in text
    assert "deployed payments 1.2.3" in text


def seed_secret_run(db: Path) -> None:
    async def seed() -> None:
        store = await open_store(str(db))
        try:
            await store.create_run(
                run_id="leaky", agent_name="ops", agent_version="1", schema_version="1.0",
                state_json=json.dumps({"context": {"api_token": SLACK_TOKEN, "team": "ops"}}),
                status="paused",
            )  # fmt: skip
        finally:
            await store.close()

    asyncio.run(seed())


def test_state_is_redacted_unless_revealed_and_reveal_is_audited(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_secret_run(demo_db)
    code, out, _ = cli(capsys, "runs", "show", "leaky", "--db", str(demo_db), "--state", "--json")
    detail = json.loads(out)
    assert SLACK_TOKEN not in out
    assert detail["state"]["context"]["team"] == "ops"
    assert detail["redacted_paths"] == ["$.context.api_token"]

    code, out, _ = cli(
        capsys, "runs", "show", "leaky", "--db", str(demo_db), "--state", "--reveal",
        "--actor", "alice", "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["state"]["context"]["api_token"] == SLACK_TOKEN
    code, out, _ = cli(capsys, "audit", "export", "--db", str(demo_db))
    revealed = [json.loads(line) for line in out.splitlines() if '"revealed"' in line]
    assert [(e["actor"], e["run_id"]) for e in revealed] == [("alice", "leaky")]

    code, _, err = cli(capsys, "runs", "show", "leaky", "--db", str(demo_db), "--reveal")
    assert code == 2
    assert "--reveal goes with --state" in err
    code, _, err = cli(capsys, "runs", "show", "nope", "--db", str(demo_db))
    assert (code, err.strip()) == (2, "approvals-bot: error: no run 'nope'")


def test_audit_verify_and_export(
    demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "audit", "verify", "--db", str(demo_db))
    assert code == 0
    assert out.startswith("audit log OK: 4 event(s)")

    code, out, _ = cli(capsys, "audit", "export", "--db", str(demo_db), "--since", "2999-01-01")
    assert (code, out) == (0, "")
    code, out, _ = cli(capsys, "audit", "export", "--db", str(demo_db), "--since", "1h")
    assert [json.loads(line)["kind"] for line in out.splitlines()] == [
        "requested", "decided", "resumed", "executed",
    ]  # fmt: skip
    target = tmp_path / "audit.jsonl"
    assert cli(capsys, "audit", "export", "--db", str(demo_db), "-o", str(target))[0] == 0
    assert len(target.read_text().splitlines()) == 4
    code, _, err = cli(capsys, "audit", "export", "--db", str(demo_db), "-o", str(target))
    assert code == 2
    assert "already exists" in err
    code, _, err = cli(capsys, "audit", "export", "--db", str(demo_db), "--since", "soon")
    assert code == 2
    assert "--since 'soon'" in err

    code, _, err = cli(capsys, "audit", "export", "--db", str(demo_db), "--since", "99999999d")
    assert code == 2
    assert "--since '99999999d'" in err
    missing = tmp_path / "no-such-dir" / "audit.jsonl"
    code, _, err = cli(capsys, "audit", "export", "--db", str(demo_db), "-o", str(missing))
    assert code == 2
    assert f"--output {missing}" in err
    assert not missing.parent.exists()

    with raw(demo_db) as connection:
        connection.execute("DROP TRIGGER audit_events_no_update")
        connection.execute("UPDATE audit_events SET actor = 'mallory' WHERE seq = 2")
    code, out, _ = cli(capsys, "audit", "verify", "--db", str(demo_db))
    assert code == 1
    assert "BROKEN at event 2: edited" in out


def test_keys_generate_then_rotate_then_drop_the_old_key(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = only_run_id(capsys, demo_db)
    key_file = key_file_for(demo_db)
    old_line = key_file.read_text().strip()

    code, out, _ = cli(capsys, "keys", "generate", "--db", str(demo_db), "--id", "k-new")
    assert code == 0
    assert "added key k-new" in out
    code, out, _ = cli(capsys, "keys", "rotate", "--db", str(demo_db))
    assert code == 0
    assert "re-encrypted with key k-new: 1 run state(s), 1 ledger result(s)" in out

    new_line = key_file.read_text().splitlines()[0]
    key_file.write_text(new_line + "\n")  # the old key is gone
    assert old_line not in key_file.read_text()
    code, out, _ = cli(capsys, "runs", "show", run_id, "--db", str(demo_db), "--state", "--json")
    assert code == 0
    assert json.loads(out)["run"]["key_id"] == "k-new"


def test_keys_generate_print_changes_no_file(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = key_file_for(demo_db).read_text()
    code, out, err = cli(capsys, "keys", "generate", "--db", str(demo_db), "--print", "--id", "m1")
    assert code == 0
    assert out.startswith("m1:")
    assert "APPROVALS_KEYS" in err
    assert key_file_for(demo_db).read_text() == before


def test_db_migrate_reports_what_it_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    db = tmp_path / "fresh.db"
    code, out, _ = cli(capsys, "db", "migrate", "--db", f"sqlite:///{db}")
    assert code == 0
    assert "from schema version 0 to" in out
    assert "0001_initial" in out
    code, out, _ = cli(capsys, "db", "migrate", "--db", str(db))
    assert "nothing to apply" in out


def test_commands_refuse_a_missing_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"
    for argv in (("runs", "list"), ("audit", "verify"), ("keys", "rotate")):
        code, _, err = cli(capsys, *argv, "--db", str(missing))
        assert code == 2
        assert "does not exist" in err
    assert not missing.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("keys", "generate"), ("keys", "rotate"), ("audit", "export"), ("audit", "verify"),
        ("runs", "list"), ("runs", "show"), ("db", "migrate"),
    ],
)  # fmt: skip
def test_every_command_has_help(argv: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "--db" in out
    assert len(out.splitlines()) > 4


def test_a_group_without_a_command_shows_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys"]) == 2
    assert "generate" in capsys.readouterr().err


def test_keys_generate_will_not_replace_a_lost_key_file(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file_for(demo_db).unlink()
    code, _, err = cli(capsys, "keys", "generate", "--db", str(demo_db))
    assert code == 2
    assert "restore the key file" in err
    assert not key_file_for(demo_db).exists()


def test_keys_generate_before_the_database_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    db = tmp_path / "new.db"
    code, out, _ = cli(capsys, "keys", "generate", "--db", str(db), "--id", "first")
    assert code == 0
    assert "created" in out
    assert key_file_for(db).read_text().startswith("first:")


def test_keys_generate_for_a_database_in_a_missing_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APPROVALS_KEYS", raising=False)
    db = tmp_path / "no-such-dir" / "new.db"
    code, _, err = cli(capsys, "keys", "generate", "--db", str(db))
    assert code == 2
    assert f"database directory {db.parent} does not exist" in err
    assert not db.parent.exists()
