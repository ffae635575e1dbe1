"""What an approver is shown of a call (its review snapshot) is sealed, and who asked for
a run or a call is fixed: what a database writer without the keys does to either shows
in the store's reads, or is refused (both engines)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.records import Amendment
from store.seals import UNVERIFIED_NOTE
from tests.store.postgres_db import RawRefused
from tests.store.store_helpers import DIGEST, Clock, make_run, new_approval, raw

NEW_DIGEST = "c" * 64
HONEST = json.dumps({"tool_name": "deploy_release", "arguments": {"version": "6.6.6-evil"}})
SHOWN = json.dumps({"tool_name": "deploy_release", "arguments": {"version": "1.2.3"}})


async def test_a_snapshot_changed_by_sql_is_never_handed_out(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    [added] = await store.add_approvals([new_approval("run-1", "c1")])
    assert added.snapshot_seal == "valid"
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE approvals SET snapshot = ? WHERE approval_id = ?", (SHOWN, added.approval_id)
        )

    fetched = await store.get_approval(added.approval_id)
    [listed] = await store.pending_page(limit=10)
    evidence = await store.decision_evidence(added.approval_id)
    assert evidence is not None
    for record in (fetched, listed, evidence.approval):
        assert record is not None
        assert record.snapshot_seal == "mismatch"
        assert "1.2.3" not in record.snapshot
        assert UNVERIFIED_NOTE in record.snapshot
        assert json.loads(record.snapshot)["digest"] == DIGEST


async def test_a_snapshot_copied_from_another_call_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    [first, second] = await store.add_approvals(
        [new_approval("run-1", "c1"), new_approval("run-1", "c2")]
    )
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE approvals SET (snapshot, snapshot_seal_key_id, snapshot_seal) = "
            "(SELECT snapshot, snapshot_seal_key_id, snapshot_seal FROM approvals "
            "WHERE approval_id = ?) WHERE approval_id = ?",
            (first.approval_id, second.approval_id),
        )
    copied = await store.get_approval(second.approval_id)
    assert copied is not None
    assert copied.snapshot_seal == "mismatch"


async def test_the_store_reseals_what_it_writes_amendments_and_retention(
    store: SqliteStore, clock: Clock
) -> None:
    await make_run(store)
    [added] = await store.add_approvals([new_approval("run-1", "c1")])
    change = Amendment(arguments_digest=NEW_DIGEST, snapshot=HONEST)
    outcome = await store.vote(
        added.approval_id, decision="approved", voter="UA", digest=DIGEST, reason="ok",
        amend=change,
    )  # fmt: skip
    assert (outcome.record.snapshot, outcome.record.snapshot_seal) == (HONEST, "valid")

    await store.transition_run("run-1", expected_status="paused", new_status="completed")
    clock.advance(86400)
    report = await store.purge_finished_runs(
        finished_before=clock.now - timedelta(seconds=1), actor="U-OPS"
    )
    assert report.snapshots == 1
    purged = await store.get_approval(added.approval_id)
    assert purged is not None
    assert (purged.snapshot_seal, json.loads(purged.snapshot)["purged"]) == ("valid", True)


async def test_the_upgrade_seals_the_snapshots_already_there_once(
    database_url: str, keyring: KeyRing
) -> None:
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        await make_run(store)
        await store.add_approvals([new_approval("run-1", "c1"), new_approval("run-1", "c2")])
    finally:
        await store.close()
    with raw(database_url) as connection:  # as a build before sealed snapshots left it
        connection.execute("ALTER TABLE approvals DROP COLUMN snapshot_seal_key_id")
        connection.execute("ALTER TABLE approvals DROP COLUMN snapshot_seal")
        connection.execute("DELETE FROM schema_migrations WHERE version = 41")

    upgraded = await open_store(database_url, keyring=keyring, environ={})
    try:
        assert "0041_sealed_snapshots" in upgraded.migration_report.applied
        approvals = await upgraded.list_approvals(run_id="run-1")
        assert [a.snapshot_seal for a in approvals] == ["valid", "valid"]
        [event] = [e for e in await upgraded.audit_events() if e.kind == "snapshots_sealed"]
        assert event.detail == {"approvals": 2}
    finally:
        await upgraded.close()

    with raw(database_url) as connection:  # after the upgrade, without the keys
        connection.execute("UPDATE approvals SET snapshot = ?", (SHOWN,))
    again = await open_store(database_url, keyring=keyring, environ={})
    try:
        assert again.migration_report.applied == ()
        approvals = await again.list_approvals(run_id="run-1")
        assert [a.snapshot_seal for a in approvals] == ["mismatch", "mismatch"]
    finally:
        await again.close()


@pytest.mark.parametrize("table", ["approvals", "runs"])
async def test_the_requester_cannot_be_changed_by_sql(
    store: SqliteStore, database_url: str, table: str
) -> None:
    await make_run(store)
    await store.add_approvals([new_approval("run-1", "c1")])
    with raw(database_url) as connection, pytest.raises(RawRefused, match="requester"):
        connection.execute(f"UPDATE {table} SET requester = 'U-APPROVER'")
    run = await store.get_run("run-1")
    [approval] = await store.list_approvals(run_id="run-1")
    assert run is not None
    assert (run.requester, approval.requester) == ("U-REQ", "U-REQ")
