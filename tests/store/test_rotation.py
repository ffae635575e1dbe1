"""Key rotation re-encrypts every sealed blob with the newest key, resumably."""

from __future__ import annotations

from pathlib import Path

from store import open_store
from store.crypto import KeyRing
from store.keys import generate_key
from tests.store.store_helpers import Clock, make_run, raw


async def seed(database_url: str | Path, ring: KeyRing, clock: Clock, runs: int) -> None:
    store = await open_store(str(database_url), keyring=ring, clock=clock, environ={})
    try:
        for n in range(runs):
            await make_run(store, f"run-{n}", f'{{"n": {n}}}')
            fresh = await store.ledger_claim(
                execution_key=f"key-{n}", arguments_digest="d", run_id=f"run-{n}",
                tool_call_id="c", tool_name="t", owner="w", lease_seconds=60,
            )  # fmt: skip
            await store.ledger_record_result(
                execution_key=f"key-{n}", lease_token=fresh.lease_token,  # type: ignore[union-attr]
                result=f"result-{n}", is_error=False,
            )  # fmt: skip
    finally:
        await store.close()


async def test_rotation_moves_everything_to_the_newest_key(database_url: str, clock: Clock) -> None:
    old = generate_key("old")
    await seed(database_url, KeyRing([old]), clock, runs=7)
    ring = KeyRing([generate_key("new"), old])
    store = await open_store(str(database_url), keyring=ring, clock=clock, environ={})
    try:
        report = await store.rotate_keys(batch_size=3)
        assert (report.key_id, report.run_states, report.ledger_results) == ("new", 7, 7)
        assert report.tampered == []
        assert {r.key_id for r in await store.list_runs()} == {"new"}
        again = await store.rotate_keys()
        assert (again.run_states, again.ledger_results, again.already_current) == (0, 0, 14)
        rotated = [e for e in await store.audit_events() if e.kind == "key_rotated"]
        assert rotated[0].detail["run_states"] == 7
    finally:
        await store.close()

    # the old key can now leave the ring: everything opens with the new key alone
    store = await open_store(database_url, keyring=KeyRing([ring.newest]), environ={})
    try:
        assert await store.load_run_state("run-3") == '{"n": 3}'
        claim = await store.ledger_claim(
            execution_key="key-3", arguments_digest="d", run_id="run-3", tool_call_id="c",
            tool_name="t", owner="w2", lease_seconds=60,
        )  # fmt: skip
        assert getattr(claim, "result", None) == "result-3"
    finally:
        await store.close()


async def test_interrupted_rotation_resumes(tmp_path: Path, clock: Clock) -> None:
    old, new = generate_key("old"), generate_key("new")
    ring = KeyRing([new, old])
    done, half = tmp_path / "done.db", tmp_path / "half.db"
    for path in (done, half):
        await seed(path, KeyRing([old]), clock, runs=5)
    finished = await open_store(str(done), keyring=ring, clock=clock, environ={})
    await finished.rotate_keys()
    await finished.close()
    # what a rotation killed after its first batch (run-0, run-1) leaves behind
    with raw(half) as connection:
        connection.execute("ATTACH DATABASE ? AS done", (str(done),))
        connection.execute(
            "UPDATE run_blobs SET (key_id, nonce, ciphertext) = (SELECT key_id, nonce, "
            "ciphertext FROM done.run_blobs d WHERE d.run_id = run_blobs.run_id) "
            "WHERE run_id IN ('run-0', 'run-1')"
        )
        connection.execute("UPDATE runs SET key_id = 'new' WHERE run_id IN ('run-0', 'run-1')")

    store = await open_store(str(half), keyring=ring, clock=clock, environ={})
    try:
        assert {r.key_id for r in await store.list_runs()} == {"new", "old"}
        report = await store.rotate_keys(batch_size=2)
        assert (report.run_states, report.ledger_results, report.already_current) == (3, 5, 2)
        assert {r.key_id for r in await store.list_runs()} == {"new"}
        assert await store.load_run_state("run-0") == '{"n": 0}'
        assert await store.load_run_state("run-4") == '{"n": 4}'
    finally:
        await store.close()


async def test_a_tampered_blob_is_not_laundered_by_rotation(
    database_url: str, clock: Clock
) -> None:
    old = generate_key("old")
    await seed(database_url, KeyRing([old]), clock, runs=3)
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE run_blobs SET ciphertext = substr(ciphertext, 2) || x'00' "
            "WHERE run_id = 'run-1'"
        )
    store = await open_store(
        database_url, keyring=KeyRing([generate_key("new"), old]), clock=clock, environ={}
    )
    try:
        report = await store.rotate_keys()
        assert report.tampered == ["run-state run-1"]
        assert report.run_states == 2
        with raw(database_url) as connection:
            (key_id,) = connection.execute(
                "SELECT key_id FROM run_blobs WHERE run_id = 'run-1'"
            ).fetchone()
        assert key_id == "old"
        tamper = [e for e in await store.audit_events() if e.kind == "tamper_detected"]
        assert [e.run_id for e in tamper] == ["run-1"]
    finally:
        await store.close()
