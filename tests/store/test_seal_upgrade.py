"""A database from before decision seals (migration 0010): the open that migrates it
seals the rows of calls still open, once and audited; no later unsealed row counts."""

from __future__ import annotations

import dataclasses

from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.records import SealCheck
from store.sql.keys import SEALED_TABLES
from tests.store.store_helpers import DIGEST, make_run, new_approval, raw

FORGED_AT = "2026-11-29T12:30:00.000000Z"


async def build_before_seals(database_url: str, keyring: KeyRing) -> None:
    """Open calls of every kind written by this build, then made to look as an earlier
    build left them: no seal columns, migration 0010 not recorded."""
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        await make_run(store)
        two = dataclasses.replace(new_approval("run-1", "pending"), required_approvals=2)
        await store.add_approvals([two, new_approval("run-1", "approved"),
                                   new_approval("run-1", "rejected"),
                                   new_approval("run-1", "old")])  # fmt: skip
        await store.vote("ap-run-1-pending", decision="approved", voter="UA", digest=DIGEST,
                         reason="ok")  # fmt: skip
        for verdict in ("approved", "rejected"):
            await store.vote(f"ap-run-1-{verdict}", decision=verdict, voter="UA", digest=DIGEST,
                             reason="ok")  # fmt: skip
        await store.add_standing_decision("ap-run-1-approved")
    finally:
        await store.close()
    with raw(database_url) as connection:
        # decided before votes existed: approved, with no vote row
        connection.execute(
            "UPDATE approvals SET status = 'approved', decider = 'UD', "
            f"decided_at = '{FORGED_AT}' WHERE approval_id = 'ap-run-1-old'"
        )
        for table in SEALED_TABLES:
            connection.execute(f"ALTER TABLE {table} DROP COLUMN seal_key_id")
            connection.execute(f"ALTER TABLE {table} DROP COLUMN seal")
        connection.execute("DELETE FROM schema_migrations WHERE version = 10")


async def checks(store: Store, approval_id: str) -> tuple[SealCheck, list[SealCheck]]:
    evidence = await store.decision_evidence(approval_id)
    assert evidence is not None
    return evidence.request_seal, [checked.seal for checked in evidence.votes]


async def test_the_upgrade_seals_open_calls_once_and_audits_it(
    database_url: str, keyring: KeyRing
) -> None:
    await build_before_seals(database_url, keyring)
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        assert "0010_decision_seals" in store.migration_report.applied
        assert await checks(store, "ap-run-1-pending") == ("valid", ["valid"])
        assert await checks(store, "ap-run-1-approved") == ("valid", ["valid"])
        assert await checks(store, "ap-run-1-old") == ("valid", ["valid"])  # its decider's
        assert await checks(store, "ap-run-1-rejected") == ("missing", ["missing"])  # closed
        assert [d.seal for d in await store.standing_decisions("run-1")] == ["valid"]
        [event] = [e for e in await store.audit_events() if e.kind == "legacy_sealed"]
        assert (event.detail["approvals"], event.detail["votes"]) == (3, 2)
        assert (event.detail["decider_votes"], event.detail["standing_decisions"]) == (1, 1)
    finally:
        await store.close()

    with raw(database_url) as connection:  # after the upgrade, written without the keys
        connection.execute(
            "INSERT INTO approval_votes (approval_id, voter, decision, digest, reason, at) "
            f"VALUES ('ap-run-1-pending', 'U-EVIL', 'approved', ?, NULL, '{FORGED_AT}')",
            (DIGEST,),
        )
    again = await open_store(database_url, keyring=keyring, environ={})
    try:
        assert again.migration_report.applied == ()
        request, votes = await checks(again, "ap-run-1-pending")
        assert (request, sorted(votes)) == ("valid", ["missing", "valid"])
        assert [e.kind for e in await again.audit_events()].count("legacy_sealed") == 1
    finally:
        await again.close()
