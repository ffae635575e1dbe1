"""Decision seals: every vote, standing decision and approval request is sealed with a
key from the ring, and what a database writer without the keys does to those rows shows
in what the store's reads say of their seals (both engines)."""

from __future__ import annotations

import dataclasses

from store import SqliteStore, open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import SealCheck
from tests.store.store_helpers import DIGEST, make_run, new_approval, raw

OTHER_DIGEST = "b" * 64


async def seals_of(store: Store, approval_id: str) -> tuple[SealCheck, list[tuple[str, SealCheck]]]:
    evidence = await store.decision_evidence(approval_id)
    assert evidence is not None
    return evidence.request_seal, [(c.vote.voter, c.seal) for c in evidence.votes]


async def two_of(store: Store, call: str = "c1", run_id: str = "run-1") -> str:
    new = dataclasses.replace(new_approval(run_id, call), required_approvals=2)
    [added] = await store.add_approvals([new])
    return added.approval_id


async def approve(store: Store, approval_id: str, voter: str) -> None:
    await store.vote(approval_id, decision="approved", voter=voter, digest=DIGEST, reason="ok")


async def test_votes_requests_and_standing_decisions_are_sealed_and_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    approval_id = await two_of(store)
    await approve(store, approval_id, "UA")
    await approve(store, approval_id, "UB")
    [single] = await store.add_approvals([new_approval("run-1", "c2")])
    await approve(store, single.approval_id, "UA")
    standing = await store.add_standing_decision(single.approval_id)

    assert await seals_of(store, approval_id) == ("valid", [("UA", "valid"), ("UB", "valid")])
    assert standing.seal == "valid"
    assert [d.seal for d in await store.standing_decisions("run-1")] == ["valid"]
    with raw(database_url) as connection:
        rows = connection.execute("SELECT seal_key_id, seal FROM approval_votes").fetchall()
    assert {row[0] for row in rows} == {"k1"}
    assert all(len(row[1]) == 64 for row in rows)


async def test_a_status_flipped_by_sql_has_no_vote_behind_it(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    [added] = await store.add_approvals([new_approval("run-1", "c1")])
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE approvals SET status = 'approved', decider = 'U-EVIL' WHERE approval_id = ?",
            (added.approval_id,),
        )
    evidence = await store.decision_evidence(added.approval_id)
    assert evidence is not None
    assert (evidence.approval.status, evidence.votes) == ("approved", ())


async def test_a_forged_vote_row_does_not_verify(store: SqliteStore, database_url: str) -> None:
    await make_run(store)
    approval_id = await two_of(store)
    await approve(store, approval_id, "UA")
    with raw(database_url) as connection:
        for voter, key_id, mac in (("UX", None, None), ("UY", "k1", "0" * 64)):
            connection.execute(
                "INSERT INTO approval_votes (approval_id, voter, decision, digest, reason, at, "
                "seal_key_id, seal) VALUES (?, ?, 'approved', ?, NULL, "
                "'2026-11-29T12:00:00.000000Z', ?, ?)",
                (approval_id, voter, DIGEST, key_id, mac),
            )
    assert (await seals_of(store, approval_id))[1] == [
        ("UA", "valid"), ("UX", "missing"), ("UY", "mismatch"),
    ]  # fmt: skip


async def test_a_vote_copied_onto_another_approval_or_run_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    await make_run(store, "run-2")
    source = await two_of(store, "c1")
    same_run = await two_of(store, "c2")
    other_run = await two_of(store, "c1", run_id="run-2")
    await approve(store, source, "UA")
    with raw(database_url) as connection:
        for target in (same_run, other_run):
            connection.execute(
                "INSERT INTO approval_votes (approval_id, voter, decision, digest, reason, at, "
                "seal_key_id, seal) SELECT ?, voter, decision, digest, reason, at, seal_key_id, "
                "seal FROM approval_votes WHERE approval_id = ?",
                (target, source),
            )
    assert await seals_of(store, same_run) == ("valid", [("UA", "mismatch")])
    assert await seals_of(store, other_run) == ("valid", [("UA", "mismatch")])


async def test_a_vote_moved_to_another_digest_or_call_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    moved_digest = await two_of(store, "c1")
    moved_call = await two_of(store, "c2")
    await approve(store, moved_digest, "UA")
    await approve(store, moved_call, "UA")
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE approval_votes SET digest = ? WHERE approval_id = ?",
            (OTHER_DIGEST, moved_digest),
        )
        connection.execute(
            "UPDATE approvals SET arguments_digest = ? WHERE approval_id = ?",
            (OTHER_DIGEST, moved_digest),
        )
        connection.execute(
            "UPDATE approvals SET execution_key = 'run-1:t9:c9' WHERE approval_id = ?",
            (moved_call,),
        )
    assert await seals_of(store, moved_digest) == ("valid", [("UA", "mismatch")])
    # The call an approval is for is fixed by its request's seal, which no longer
    # verifies; the vote itself (this approval, this digest) is still what was cast.
    assert await seals_of(store, moved_call) == ("mismatch", [("UA", "valid")])


async def test_a_lowered_quorum_breaks_the_seals_before_and_after_the_votes(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    after_votes = await two_of(store, "c1")
    before_votes = await two_of(store, "c2")
    await approve(store, after_votes, "UA")
    with raw(database_url) as connection:
        connection.execute("UPDATE approvals SET required_approvals = 1")
    outcome = await store.vote(
        before_votes, decision="approved", voter="UA", digest=DIGEST, reason="ok"
    )

    assert outcome.record.status == "approved"  # the store's own tally trusts the row...
    assert await seals_of(store, after_votes) == ("mismatch", [("UA", "valid")])
    assert (await seals_of(store, before_votes))[0] == "mismatch"  # ...the request seal does not


async def test_a_forged_or_copied_standing_decision_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    await make_run(store, "run-2")
    [real] = await store.add_approvals([new_approval("run-1", "c1")])
    await approve(store, real.approval_id, "UA")
    await store.add_standing_decision(real.approval_id)
    [forged] = await store.add_approvals([new_approval("run-2", "c1")])
    [copied] = await store.add_approvals([new_approval("run-2", "c2")])
    with raw(database_url) as connection:
        connection.execute(
            "INSERT INTO standing_decisions (approval_id, run_id, tool_name, decision, decider, "
            "created_at) VALUES (?, 'run-2', 'deploy_release', 'approved', 'UA', "
            "'2026-11-29T12:00:00.000000Z')",
            (forged.approval_id,),
        )
    assert [d.seal for d in await store.standing_decisions("run-2")] == ["missing"]
    with raw(database_url) as connection:
        connection.execute(
            "DELETE FROM standing_decisions WHERE approval_id = ?", (forged.approval_id,)
        )
        connection.execute(
            "INSERT INTO standing_decisions (approval_id, run_id, tool_name, decision, decider, "
            "reason, message, created_at, seal_key_id, seal) SELECT ?, 'run-2', tool_name, "
            "decision, decider, reason, message, created_at, seal_key_id, seal "
            "FROM standing_decisions WHERE approval_id = ?",
            (copied.approval_id, real.approval_id),
        )
    assert [d.seal for d in await store.standing_decisions("run-2")] == ["mismatch"]
    assert [d.seal for d in await store.standing_decisions("run-1")] == ["valid"]


async def test_a_seal_naming_a_key_the_ring_lacks_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    approval_id = await two_of(store)
    await approve(store, approval_id, "UA")
    with raw(database_url) as connection:
        connection.execute("UPDATE approval_votes SET seal_key_id = 'k-unknown'")
    assert await seals_of(store, approval_id) == ("valid", [("UA", "unknown_key")])


async def test_old_ring_keys_verify_and_rotation_reseals_so_they_can_leave(
    database_url: str, keyring: KeyRing
) -> None:
    first = await open_store(database_url, keyring=keyring, environ={})
    try:
        await make_run(first)
        approval_id = await two_of(first)
        await approve(first, approval_id, "UA")
    finally:
        await first.close()
    newer = KeyRing([generate_key("k2"), *keyring])
    rotated = await open_store(database_url, keyring=newer, environ={})
    try:
        assert await seals_of(rotated, approval_id) == ("valid", [("UA", "valid")])
        report = await rotated.rotate_keys()
        assert (report.seals, report.tampered) == (3, [])  # the request, the vote, the snapshot
    finally:
        await rotated.close()
    only_new = await open_store(database_url, keyring=KeyRing([newer.newest]), environ={})
    try:
        assert await seals_of(only_new, approval_id) == ("valid", [("UA", "valid")])
        approval = await only_new.get_approval(approval_id)
        assert approval is not None
        assert approval.snapshot_seal == "valid"
    finally:
        await only_new.close()


async def test_rotation_does_not_launder_a_forged_seal(database_url: str, keyring: KeyRing) -> None:
    first = await open_store(database_url, keyring=keyring, environ={})
    try:
        await make_run(first)
        approval_id = await two_of(first)
        await approve(first, approval_id, "UA")
    finally:
        await first.close()
    with raw(database_url) as connection:
        connection.execute("UPDATE approval_votes SET voter = 'U-EVIL'")
    newer = KeyRing([generate_key("k2"), *keyring])
    rotated = await open_store(database_url, keyring=newer, environ={})
    try:
        report = await rotated.rotate_keys()
        assert (report.seals, report.tampered) == (2, [f"vote seal {approval_id} U-EVIL"])
        assert await seals_of(rotated, approval_id) == ("valid", [("U-EVIL", "mismatch")])
    finally:
        await rotated.close()
    with raw(database_url) as connection:
        assert connection.execute("SELECT seal_key_id FROM approval_votes").fetchall() == [("k1",)]


async def test_a_runs_approvals_come_with_the_newest_requests_seal_checked(
    store: SqliteStore,
) -> None:
    await make_run(store)
    assert await store.run_approvals("run-1", limit=10) == ([], None)
    await store.add_approvals([new_approval(call="c1"), new_approval(call="c2")])

    rows, newest_request = await store.run_approvals("run-1", limit=10)

    assert rows == await store.list_approvals(run_id="run-1", limit=10)
    assert newest_request == "valid"
