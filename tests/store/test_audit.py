"""The audit chain: verify names the first edited, deleted, reordered or rewritten event."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import timedelta

import pytest

from bot.errors import InputError
from store import SqliteStore
from store.audit import event_hash, event_to_json_line
from tests.store.postgres_db import RawRefused
from tests.store.store_helpers import Clock, Raw, raw


async def fill(store: SqliteStore, clock: Clock, count: int = 6) -> None:
    """`count` events, linked into the chain (a read links what is queued)."""
    for n in range(1, count + 1):
        await store.append_audit("decided", actor=f"U{n}", run_id="run-1", detail={"n": n})
        clock.advance(60)
    assert len(await store.audit_events()) == count


def unlocked(connection: Raw) -> Raw:
    """Drop the append-only triggers, as someone with write access to the database can."""
    connection.drop_trigger("audit_events_no_update", "audit_events")
    connection.drop_trigger("audit_events_no_delete", "audit_events")
    return connection


async def test_a_clean_chain_verifies_and_links(store: SqliteStore, clock: Clock) -> None:
    await fill(store, clock)
    events = await store.audit_events()
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert events[0].prev_hash == "0" * 64
    assert all(later.prev_hash == earlier.hash for earlier, later in itertools.pairwise(events))
    verification = await store.verify_audit()
    assert verification.ok
    assert verification.checked == 6
    assert await store.audit_head() == (6, events[-1].hash)


async def test_the_log_is_append_only_through_sql(
    store: SqliteStore, clock: Clock, database_url: str
) -> None:
    await fill(store, clock, 2)
    with raw(database_url) as connection:
        with pytest.raises(RawRefused, match="append-only"):
            connection.execute("UPDATE audit_events SET actor = 'X'")
        with pytest.raises(RawRefused, match="append-only"):
            connection.execute("DELETE FROM audit_events")


def edit_detail(connection: Raw) -> None:
    connection.execute("""UPDATE audit_events SET detail = '{"n":99}' WHERE seq = 3""")


def delete_middle(connection: Raw) -> None:
    connection.execute("DELETE FROM audit_events WHERE seq = 3")


def delete_tail(connection: Raw) -> None:
    connection.execute("DELETE FROM audit_events WHERE seq >= 5")


def swap_order(connection: Raw) -> None:
    connection.execute("UPDATE audit_events SET seq = -3 WHERE seq = 3")
    connection.execute("UPDATE audit_events SET seq = 3 WHERE seq = 4")
    connection.execute("UPDATE audit_events SET seq = 4 WHERE seq = -3")


def rewrite_with_fresh_hash(connection: Raw) -> None:
    prev_hash, at = connection.execute(
        "SELECT prev_hash, at FROM audit_events WHERE seq = 3"
    ).fetchone()
    forged = event_hash(
        prev_hash, kind="decided", actor="MALLORY", run_id="run-1", approval_id=None,
        detail_json='{"n":3}', at=at,
    )  # fmt: skip
    connection.execute(
        "UPDATE audit_events SET actor = 'MALLORY', hash = ? WHERE seq = 3", (forged,)
    )


def delete_and_renumber(connection: Raw) -> None:
    connection.execute("DELETE FROM audit_events WHERE seq = 3")
    for seq in (4, 5, 6):
        connection.execute("UPDATE audit_events SET seq = ? WHERE seq = ?", (seq - 1, seq))
    connection.execute("UPDATE audit_head SET seq = 5")


@pytest.mark.parametrize(
    ("tamper", "first_bad", "problem"),
    [
        (edit_detail, 3, "edited"),
        (delete_middle, 3, "deleted"),
        (delete_tail, 5, "deleted"),
        (swap_order, 3, "reordered"),
        (rewrite_with_fresh_hash, 4, "rewritten"),
        (delete_and_renumber, 3, "rewritten"),
    ],
    ids=["edited", "deleted-middle", "deleted-tail", "reordered", "rehashed", "renumbered"],
)
async def test_verify_finds_the_first_bad_event(
    store: SqliteStore, clock: Clock, database_url: str, tamper, first_bad: int, problem: str
) -> None:
    await fill(store, clock)
    with raw(database_url) as connection:
        tamper(unlocked(connection))

    verification = await store.verify_audit()

    assert not verification.ok
    assert (verification.first_bad_seq, verification.problem) == (first_bad, problem)


async def test_events_filter_by_time_run_and_approval(store: SqliteStore, clock: Clock) -> None:
    start = clock.now
    await store.append_audit("requested", run_id="run-1", approval_id="ap-1")
    clock.advance(3600)
    await store.append_audit("decided", run_id="run-1", approval_id="ap-1", actor="U1")
    await store.append_audit("requested", run_id="run-2", approval_id="ap-2")

    since = await store.audit_events(since=start + timedelta(minutes=30))
    assert [e.kind for e in since] == ["decided", "requested"]
    assert [e.seq for e in await store.audit_events(run_id="run-2")] == [3]
    assert [e.seq for e in await store.audit_events(approval_id="ap-1")] == [1, 2]


async def test_export_line_carries_every_field(store: SqliteStore) -> None:
    await store.append_audit("revealed", actor="ops", run_id="r", detail={"why": "é"})
    [event] = await store.audit_events()
    line = json.loads(event_to_json_line(event))
    assert line["hash"] == event.hash
    assert line["detail"] == {"why": "é"}
    assert line["at"].endswith("+00:00")
    recomputed = hashlib.sha256(
        (line["prev_hash"] + json.dumps(
            {k: line[k] for k in ("kind", "actor", "run_id", "approval_id", "detail")}
            | {"at": event.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")},
            sort_keys=True, separators=(",", ":"), ensure_ascii=False,
        )).encode()
    ).hexdigest()  # fmt: skip
    assert recomputed == event.hash


async def test_bad_detail_is_refused_and_nothing_written(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="JSON"):
        await store.append_audit("decided", detail={"when": object()})
    assert await store.audit_events() == []
