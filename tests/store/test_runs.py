"""Runs: sealed state round trips, compare-and-set on version and status."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest

from bot.errors import ConflictError, InputError
from bot.off_loop import OFF_LOOP_BYTES as OFFLOAD_BYTES
from store import SqliteStore
from tests.store.store_helpers import Clock, database_bytes, make_run, raw


async def test_state_round_trips_and_is_not_stored_in_clear(
    store: SqliteStore, database_url: str
) -> None:
    state = json.dumps({"context": {"ticket": "OPS-7 ünïcode"}, "history": []})
    await make_run(store, state=state)

    assert await store.load_run_state("run-1") == state
    with raw(database_url) as connection:
        (ciphertext,) = connection.execute("SELECT ciphertext FROM run_blobs").fetchone()
    assert b"OPS-7" not in ciphertext


async def test_no_byte_of_the_sqlite_file_holds_the_state(
    sqlite_store: SqliteStore, db_path: Path
) -> None:
    await make_run(sqlite_store, state=json.dumps({"ticket": "OPS-7 ünïcode"}))

    assert b"OPS-7" not in database_bytes(db_path)


async def test_large_state_round_trips(store: SqliteStore) -> None:
    big = json.dumps({"items": ["x" * 100] * (OFFLOAD_BYTES // 50)})
    assert len(big) > OFFLOAD_BYTES
    await make_run(store, state=big)
    assert await store.load_run_state("run-1") == big


async def test_save_is_compare_and_set_on_version(store: SqliteStore, clock: Clock) -> None:
    await make_run(store)
    clock.advance(1)
    saved = await store.save_run_state(
        "run-1", expected_version=1, state_json='{"n": 2}', status="completed", schema_version="1.0"
    )
    assert (saved.version, saved.status) == (2, "completed")
    assert saved.updated_at > saved.created_at

    with pytest.raises(ConflictError, match="version 2"):
        await store.save_run_state(
            "run-1",
            expected_version=1,
            state_json='{"n": 3}',
            status="failed",
            schema_version="1.0",
        )
    assert await store.load_run_state("run-1") == '{"n": 2}'
    with pytest.raises(InputError, match="no run"):
        await store.save_run_state(
            "nope", expected_version=1, state_json="{}", status="failed", schema_version="1.0"
        )


async def test_transition_claims_exactly_once(store: SqliteStore) -> None:
    await make_run(store)
    claimed = await store.transition_run("run-1", expected_status="paused", new_status="resuming")
    again = await store.transition_run("run-1", expected_status="paused", new_status="resuming")

    assert claimed is not None
    assert (claimed.status, claimed.version) == ("resuming", 2)
    assert again is None
    # the blob was not rewritten by a status transition, and still opens
    assert await store.load_run_state("run-1") == '{"n": 1}'
    with pytest.raises(InputError, match="no run"):
        await store.transition_run("nope", expected_status="paused", new_status="resuming")


async def test_a_transition_at_a_version_the_run_moved_past_changes_nothing(
    store: SqliteStore,
) -> None:
    await make_run(store)  # paused, version 1
    claimed = await store.transition_run("run-1", expected_status="paused", new_status="resuming")
    assert claimed is not None
    parked = await store.transition_run("run-1", expected_status="resuming", new_status="paused")
    assert parked is not None  # paused again, by someone else, at a newer version
    stale = await store.transition_run(
        "run-1", expected_status="paused", new_status="failed", expected_version=1
    )
    assert stale is None
    now = await store.get_run("run-1")
    assert now is not None
    assert (now.status, now.version) == ("paused", 3)
    failed = await store.transition_run(
        "run-1", expected_status="paused", new_status="failed", expected_version=3
    )
    assert failed is not None
    assert (failed.status, failed.version) == ("failed", 4)


async def test_duplicate_run_and_bad_status_are_refused(store: SqliteStore) -> None:
    await make_run(store)
    with pytest.raises(ConflictError, match="already exists"):
        await make_run(store)
    with pytest.raises(InputError, match="status"):
        await store.transition_run("run-1", expected_status="paused", new_status="sleeping")  # type: ignore[arg-type]


async def test_thread_lookup_and_listing(store: SqliteStore, clock: Clock) -> None:
    await make_run(store, "run-1")
    clock.advance(1)
    await make_run(store, "run-2")
    await store.set_run_thread("run-1", channel="C1", thread_ts="111.1")
    await store.transition_run("run-2", expected_status="paused", new_status="resuming")

    found = await store.find_run_by_thread("C1", "111.1")
    assert found is not None
    assert found.run_id == "run-1"
    assert await store.find_run_by_thread("C1", "999.9") is None
    assert [r.run_id for r in await store.list_runs(status="resuming")] == ["run-2"]
    assert {r.run_id for r in await store.list_runs()} == {"run-1", "run-2"}
    with pytest.raises(InputError):
        await store.set_run_thread("nope", channel="C1", thread_ts="1")


# The CPU work on a state's bytes: UTF-8 conversion, SHA-256 and AES-GCM (C functions, as
# the profiler names them), when our code calls it (a database driver decodes its own
# small replies).
STATE_CPU_WORK = ("str.encode", "bytes.decode", "sha256", "hexdigest", "AESGCM.")
OUR_CODE = tuple(str(Path(__file__).resolve().parents[2] / package) for package in ("bot", "store"))


@contextmanager
def state_work_on_this_thread() -> Iterator[set[str]]:
    """The names of the state CPU work functions our code calls on this thread inside
    the block."""
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call" and frame.f_code.co_filename.startswith(OUR_CODE):
            name = getattr(arg, "__qualname__", "")
            if any(work in name for work in STATE_CPU_WORK):
                seen.add(name)

    sys.setprofile(profile)  # this thread only
    try:
        yield seen
    finally:
        sys.setprofile(None)


async def test_a_large_state_is_converted_hashed_and_sealed_off_the_event_loop(
    store: SqliteStore,
) -> None:
    """Sealing or opening megabytes on the loop would stall every Slack acknowledgement
    of the process: for a large state, the loop's own thread does none of that work."""
    big = json.dumps({"items": ["x" * 100] * (OFFLOAD_BYTES // 50)})
    with state_work_on_this_thread() as on_the_loop:
        await make_run(store, "big", big)
        loaded = await store.load_run_state("big")
    assert loaded == big
    assert on_the_loop == set()


async def test_the_loop_check_sees_a_small_state_handled_on_the_loop(store: SqliteStore) -> None:
    """A small state is cheaper to seal inline than to hand to a thread: the check above
    sees that work when it does happen on the loop."""
    with state_work_on_this_thread() as on_the_loop:
        await make_run(store, "small", '{"n": 1}')
        await store.load_run_state("small")
    assert {"AESGCM.encrypt", "AESGCM.decrypt", "HASH.hexdigest"} <= on_the_loop
