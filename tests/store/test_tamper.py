"""Every tamper shape fails closed: one TamperError, a tamper_detected audit event."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.errors import ConfigError, KeyMissingError, TamperError
from bot.runtime.journal import Fresh
from store import SqliteStore, open_store
from store.crypto import DataKey, KeyRing
from store.keys import generate_key
from store.sql.keys import unknown_key_uses
from tests.store.store_helpers import Clock, Raw, make_run, raw

Tamper = Callable[[Raw], object]


def flip_last_byte(
    column: str, table: str = "run_blobs", where: str = "run_id = 'run-1'"
) -> Tamper:
    def tamper(connection: Raw) -> None:
        (value,) = connection.execute(f"SELECT {column} FROM {table} WHERE {where}").fetchone()
        changed = value[:-1] + bytes([value[-1] ^ 0x01])
        connection.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (changed,))

    return tamper


def truncate_ciphertext(connection: Raw) -> None:
    connection.execute(
        "UPDATE run_blobs SET ciphertext = substr(ciphertext, 1, length(ciphertext) - 5) "
        "WHERE run_id = 'run-1'"
    )


def truncate_to_nothing(connection: Raw) -> None:
    connection.execute("UPDATE run_blobs SET ciphertext = x'00' WHERE run_id = 'run-1'")


def ciphertext_as_text(connection: Raw) -> None:
    connection.execute(
        "UPDATE run_blobs SET ciphertext = substr(ciphertext, 2) || x'00' WHERE run_id = 'run-1'"
    )


def swap_blobs(connection: Raw) -> None:
    connection.execute(
        "UPDATE run_blobs SET (key_id, nonce, ciphertext) = "
        "(SELECT key_id, nonce, ciphertext FROM run_blobs WHERE run_id = 'run-2') "
        "WHERE run_id = 'run-1'"
    )


def edit_schema_version(connection: Raw) -> None:
    connection.execute("UPDATE runs SET schema_version = '0.9' WHERE run_id = 'run-1'")


def edit_blob_digest(connection: Raw) -> None:
    connection.execute("UPDATE runs SET blob_digest = ? WHERE run_id = 'run-1'", ("0" * 64,))


def delete_blob(connection: Raw) -> None:
    connection.execute("DELETE FROM run_blobs WHERE run_id = 'run-1'")


def relabel_key(connection: Raw) -> None:
    connection.execute("UPDATE run_blobs SET key_id = 'k2' WHERE run_id = 'run-1'")


TAMPER_SHAPES: dict[str, Tamper] = {
    "bit flip in ciphertext": flip_last_byte("ciphertext"),
    "bit flip in nonce": flip_last_byte("nonce"),
    "truncated ciphertext": truncate_ciphertext,
    "ciphertext shorter than a tag": truncate_to_nothing,
    "ciphertext rewritten as TEXT": ciphertext_as_text,
    "blob swapped from another run": swap_blobs,
    "schema version edited": edit_schema_version,
    "blob digest edited": edit_blob_digest,
    "blob deleted": delete_blob,
    "key id relabelled to another key of the ring": relabel_key,
}


@pytest.fixture
def two_keys() -> KeyRing:
    return KeyRing([generate_key("k1"), generate_key("k2")])


@pytest.mark.parametrize("shape", list(TAMPER_SHAPES))
async def test_tampered_state_fails_closed_with_an_audit_event(
    shape: str, database_url: str, two_keys: KeyRing, clock: Clock
) -> None:
    store = await open_store(database_url, keyring=two_keys, clock=clock, environ={})
    try:
        await make_run(store, "run-1", '{"secret": "state one"}')
        await make_run(store, "run-2", '{"secret": "state two"}')
        with raw(database_url) as connection:
            TAMPER_SHAPES[shape](connection)

        with pytest.raises(TamperError) as caught:
            await store.load_run_state("run-1")

        assert "run_id=run-1" in str(caught.value)
        events = await store.audit_events(run_id="run-1")
        assert [e.kind for e in events] == ["tamper_detected"]
        assert events[0].detail["purpose"] == "run-state"
        assert await store.load_run_state("run-2") == '{"secret": "state two"}'
    finally:
        await store.close()


async def test_an_older_blob_of_the_same_run_put_back_fails(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store, "run-1", '{"step": 1}')
    with raw(database_url) as connection:
        old = connection.execute("SELECT nonce, ciphertext FROM run_blobs").fetchone()
    await store.save_run_state(
        "run-1", expected_version=1, state_json='{"step": 2}', status="paused", schema_version="1.0"
    )
    with raw(database_url) as connection:
        connection.execute("UPDATE run_blobs SET nonce = ?, ciphertext = ?", old)

    with pytest.raises(TamperError, match="failed authentication"):
        await store.load_run_state("run-1")


async def test_wrong_key_under_the_same_id_fails(
    database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    store = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    await make_run(store)
    await store.close()
    impostor = KeyRing([DataKey(key_id="k1", secret=bytes(32))])
    store = await open_store(database_url, keyring=impostor, clock=clock, environ={})
    try:
        with pytest.raises(TamperError, match="different key"):
            await store.load_run_state("run-1")
        assert [e.kind for e in await store.audit_events()] == ["tamper_detected"]
    finally:
        await store.close()


async def test_a_ring_missing_a_used_key_is_refused_at_open(
    database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    store = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    await make_run(store)
    await store.close()
    with pytest.raises(ConfigError, match="k1"):
        await open_store(database_url, keyring=KeyRing([generate_key("k9")]), environ={})


async def test_start_up_needs_the_keys_of_open_runs_only_and_other_ids_are_listed(
    database_url: str, keyring: KeyRing, clock: Clock
) -> None:
    store = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    await make_run(store, "done")
    await make_run(store, "open")
    assert await store.transition_run("done", expected_status="paused", new_status="completed")
    await store.close()
    with raw(database_url) as connection:
        connection.execute("UPDATE run_blobs SET key_id = 'evil' WHERE run_id = 'done'")
    store = await open_store(database_url, keyring=keyring, clock=clock, environ={})
    try:
        uses = await unknown_key_uses(store.database, store.keyring)
        assert [str(use) for use in uses] == [
            "run-state of run done (completed) names key id 'evil'"
        ]
    finally:
        await store.close()
    with raw(database_url) as connection:
        connection.execute("UPDATE run_blobs SET key_id = 'evil' WHERE run_id = 'open'")
    with pytest.raises(ConfigError, match="runs not finished sealed with key id\\(s\\) evil"):
        await open_store(database_url, keyring=keyring, clock=clock, environ={})


async def test_a_key_id_the_ring_lacks_is_a_missing_key_not_tamper(
    store: SqliteStore, database_url: str
) -> None:
    """Rotated in before this process had the key, or planted: either way the data cannot
    be read here, nothing runs, and readiness names the key; a scan of rows no open run
    needs reports it as tampering (store.inspection)."""
    await make_run(store)
    with raw(database_url) as connection:
        connection.execute("UPDATE run_blobs SET key_id = 'nobody'")
    with pytest.raises(KeyMissingError, match="key id 'nobody', which this process's key ring"):
        await store.load_run_state("run-1")
    assert store.missing_key_ids() == {"nobody": "run-state of run run-1"}
    assert [e.kind for e in await store.audit_events()] == []


@pytest.mark.parametrize("column", ["result_ciphertext", "result_nonce"])
async def test_tampered_ledger_result_is_never_reused(
    store: SqliteStore, database_url: str, column: str
) -> None:
    claim_args = {
        "execution_key": "key-1", "arguments_digest": "d", "run_id": "run-1",
        "tool_call_id": "c1", "tool_name": "deploy_release", "owner": "w", "lease_seconds": 60.0,
    }  # fmt: skip
    fresh = await store.ledger_claim(**claim_args)  # type: ignore[arg-type]
    assert isinstance(fresh, Fresh)
    await store.ledger_record_result(
        execution_key="key-1", lease_token=fresh.lease_token, result="deployed", is_error=False
    )
    with raw(database_url) as connection:
        flip_last_byte(column, table="ledger", where="execution_key = 'key-1'")(connection)

    with pytest.raises(TamperError, match="ledger-result"):
        await store.ledger_claim(**claim_args)  # type: ignore[arg-type]
    assert [e.kind for e in await store.audit_events()] == ["tamper_detected"]
