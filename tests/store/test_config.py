"""Database URL, key ring and key file handling: clear errors, no key material in them."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from bot.errors import ConfigError
from store import SqliteStore, open_store
from store.config import (
    PostgresLocation,
    SqliteLocation,
    parse_database_url,
    synchronous_from_env,
)
from store.keys import format_key, generate_key, key_file_for, parse_keyring, prepend_key_to_file
from tests.store.store_helpers import make_run

GOOD = base64.b64encode(bytes(range(32))).decode()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("approvals.db", "approvals.db"),
        ("./data/approvals.db", "data/approvals.db"),
        ("sqlite:///rel/approvals.db", "rel/approvals.db"),
        ("sqlite:////abs/approvals.db", "/abs/approvals.db"),
        ("SQLITE:////abs/x.db", "/abs/x.db"),
    ],
)
def test_database_urls(url: str, expected: str) -> None:
    location = parse_database_url(url)
    assert isinstance(location, SqliteLocation)
    assert location.path == Path(expected)


@pytest.mark.parametrize(
    ("url", "display"),
    [
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgres://u:secret@h:5433/db?sslmode=require", "postgres://u@h:5433/db"),
    ],
)
def test_postgres_urls_select_postgres_and_never_show_the_password(url: str, display: str) -> None:
    location = parse_database_url(url)
    assert isinstance(location, PostgresLocation)
    assert (location.dsn, location.display) == (url, display)
    assert "secret" not in repr(location)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://u@h", "must name a host and a database"),
        ("postgresql:///db", "must name a host and a database"),
        ("postgresql://u@h:port/db", "not a valid postgresql:// URL"),
        ("mysql://h/db", "unsupported scheme 'mysql'"),
        ("sqlite://approvals.db", "three slashes"),
        ("sqlite:///:memory:", "database file"),
        ("  ", "empty"),
    ],
)
def test_bad_database_urls(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_database_url(url)


def test_synchronous_setting() -> None:
    assert synchronous_from_env({}) == "FULL"
    assert synchronous_from_env({"APPROVALS_SQLITE_SYNCHRONOUS": "normal"}) == "NORMAL"
    with pytest.raises(ConfigError, match="FULL or NORMAL"):
        synchronous_from_env({"APPROVALS_SQLITE_SYNCHRONOUS": "OFF"})


def test_keyring_first_key_encrypts() -> None:
    other = base64.b64encode(bytes(32)).decode()
    ring = parse_keyring(f"new:{GOOD}, old:{other}", source="APPROVALS_KEYS")
    assert ring.key_ids == ("new", "old")
    assert ring.newest.key_id == "new"
    assert GOOD not in repr(ring)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no keys"),
        (GOOD, "entry 1 has no ':'"),
        (f"k1:{GOOD},k2:not base64!", "entry 2 \\(key id 'k2'\\) is not valid base64"),
        (f"k1:{base64.b64encode(bytes(16)).decode()}", "decodes to 16 bytes"),
        (f"bad id!:{GOOD}", "key id 'bad id!'"),
        (f"k1:{GOOD},k1:{GOOD}", "appears twice"),
    ],
)
def test_bad_keyrings_name_the_problem_not_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_keyring(text, source="APPROVALS_KEYS")
    assert GOOD not in str(caught.value)


async def test_key_file_is_created_0600_and_reused(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    store = await open_store(str(db), environ={})
    await make_run(store)
    first_ids = store.keyring.key_ids
    await store.close()

    key_file = key_file_for(db)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    store = await open_store(f"sqlite:///{db}", environ={})
    try:
        assert store.keyring.key_ids == first_ids
        assert await store.load_run_state("run-1") == '{"n": 1}'
    finally:
        await store.close()


async def test_loose_key_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    await (await open_store(str(db), environ={})).close()
    os.chmod(key_file_for(db), 0o644)
    with pytest.raises(ConfigError, match=r"mode 0644.*chmod 600"):
        await open_store(str(db), environ={})


async def test_missing_key_file_beside_sealed_data_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    store = await open_store(str(db), environ={})
    await make_run(store)
    await store.close()
    key_file_for(db).unlink()
    with pytest.raises(ConfigError, match=r"key file .* is missing"):
        await open_store(str(db), environ={})
    assert not key_file_for(db).exists()


async def test_env_keys_win_over_the_key_file(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    key = generate_key("managed")
    store = await open_store(str(db), environ={"APPROVALS_KEYS": format_key(key)})
    try:
        assert store.keyring.key_ids == ("managed",)
        assert not key_file_for(db).exists()
    finally:
        await store.close()


def test_prepend_makes_the_new_key_newest(tmp_path: Path) -> None:
    path = tmp_path / "x.key"
    old = generate_key("old")
    path.write_text(format_key(old) + "\n")
    path.chmod(0o600)
    ring = prepend_key_to_file(path, generate_key("new"))
    assert ring.key_ids == ("new", "old")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(ConfigError, match="already"):
        prepend_key_to_file(path, generate_key("new"))


async def test_missing_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await open_store(str(tmp_path / "nowhere" / "a.db"), environ={})


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({}, 2), ({"APPROVALS_SQLITE_SYNCHRONOUS": "NORMAL"}, 1)],
    ids=["FULL by default", "NORMAL by configuration"],
)
async def test_the_writer_uses_the_configured_synchronous_level(
    tmp_path: Path, environ: dict[str, str], expected: int
) -> None:
    store = await open_store(str(tmp_path / "s.db"), environ=environ)
    assert isinstance(store, SqliteStore)
    try:
        level = await store.database.transaction(
            lambda connection: connection.execute("PRAGMA synchronous").fetchone()[0]
        )
        mode = await store.database.transaction(
            lambda connection: connection.execute("PRAGMA journal_mode").fetchone()[0]
        )
    finally:
        await store.close()
    assert (level, mode) == (expected, "wal")


def file_modes(directory: Path, prefix: str) -> dict[str, int]:
    return {
        path.name: stat.S_IMODE(path.stat().st_mode)
        for path in directory.iterdir()
        if path.name.startswith(prefix)
    }


async def test_a_new_database_is_private(tmp_path: Path) -> None:
    db = tmp_path / "private.db"
    store = await open_store(str(db), environ={})
    try:
        await make_run(store)
        modes = file_modes(tmp_path, "private.db")
    finally:
        await store.close()
    assert modes["private.db"] == 0o600
    assert modes["private.db-wal"] == 0o600
    assert modes["private.db.key"] == 0o600
