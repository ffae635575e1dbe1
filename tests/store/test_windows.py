"""Approval windows in the store, on every engine: opened only on an approved call,
sealed over what they mean, matched by a keyed MAC of the values (never stored), and a
row a database writer extends, retargets or inserts covers nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.errors import InputError
from store import SqliteStore
from tests.store.store_helpers import DIGEST, T0, Clock, make_run, new_approval, raw

HOUR = timedelta(hours=1)
PAYMENTS = '{"service":"payments"}'


async def _approved(store: SqliteStore, call: str = "c1") -> str:
    await make_run(store, f"run-{call}")
    approval_id = f"ap-run-{call}-{call}"
    await store.add_approvals([new_approval(f"run-{call}", call)])
    await store.vote(approval_id, decision="approved", voter="UALICE", digest=DIGEST, reason="ok")
    return approval_id


async def test_a_window_is_sealed_matched_by_its_values_and_revoked(
    store: SqliteStore, clock: Clock, database_url: str
) -> None:
    approval_id = await _approved(store)
    window = await store.open_window(
        approval_id, match_fields=("service",), match_values=PAYMENTS, lasts=2 * HOUR
    )
    assert (window.seal, window.decider, window.match_fields) == ("valid", "UALICE", ("service",))
    assert window.expires_at == T0 + 2 * HOUR
    assert await store.open_windows("deploy_release", at=T0 + HOUR) == [window]
    assert await store.open_windows("deploy_release", at=T0 + 2 * HOUR) == []
    assert await store.window_matches(approval_id, match_values=PAYMENTS)
    assert not await store.window_matches(approval_id, match_values='{"service":"ledger"}')
    with raw(database_url) as connection:
        (stored,) = connection.execute("SELECT * FROM approval_windows").fetchall()
    assert "payments" not in repr(tuple(stored))  # only a MAC of the values is kept

    clock.now = T0 + HOUR
    ended = await store.revoke_window(approval_id, actor="UADMIN", reason="done")
    assert ended is not None
    assert ended.revoked_by == "UADMIN"
    assert await store.open_windows("deploy_release", at=clock.now) == []
    assert await store.revoke_window(approval_id, actor="UADMIN", reason="again") is None
    kinds = [(e.kind, e.actor) for e in await store.audit_events() if "window" in e.kind]
    assert kinds == [("window_opened", "UALICE"), ("window_revoked", "UADMIN")]


async def test_only_an_approved_call_opens_a_window(store: SqliteStore) -> None:
    await make_run(store)
    await store.add_approvals([new_approval("run-1", "c1")])
    with pytest.raises(InputError, match="only an approved call"):
        await store.open_window("ap-run-1-c1", match_fields=(), match_values="{}", lasts=HOUR)
    with pytest.raises(InputError, match="no approval"):
        await store.open_window("nope", match_fields=(), match_values="{}", lasts=HOUR)


async def test_a_window_a_database_writer_touched_covers_nothing(
    store: SqliteStore, database_url: str
) -> None:
    approval_id = await _approved(store)
    other = await _approved(store, "c2")
    await store.open_window(approval_id, match_fields=("service",), match_values=PAYMENTS,
                            lasts=HOUR)  # fmt: skip
    with raw(database_url) as connection:
        connection.execute(  # extended by a day
            "UPDATE approval_windows SET expires_at = '2026-11-30T12:00:00.000000Z'"
        )
        connection.execute(  # copied onto another approval, with its seal
            "INSERT INTO approval_windows SELECT ?, run_id, tool_name, match_fields, "
            "match_digest, 'UMALLORY', reason, created_at, expires_at, lasts_seconds, "
            "revoked_at, revoked_by, revoke_reason, seal_key_id, seal FROM approval_windows",
            (other,),
        )
    seals = {w.window_id: w.seal for w in await store.open_windows("deploy_release", at=T0)}
    assert seals == {approval_id: "mismatch", other: "mismatch"}
