"""Who has read an approval's arguments in full, per digest (migration 0005): recorded
once per (approval, reader, digest), audited once, read back by the service before it
counts an approval of a call the card cannot show whole."""

from __future__ import annotations

import pytest

from bot.errors import InputError
from store import SqliteStore
from tests.store.store_helpers import DIGEST, make_run, new_approval

NEW_DIGEST = "b" * 64


async def approval(store: SqliteStore) -> str:
    await make_run(store)
    [record] = await store.add_approvals([new_approval()])
    return record.approval_id


async def test_a_full_read_is_recorded_once_per_reader_and_digest(store: SqliteStore) -> None:
    approval_id = await approval(store)
    assert not await store.has_read_in_full(approval_id, reader="UA", digest=DIGEST)

    assert await store.record_full_read(approval_id, reader="UA", digest=DIGEST)
    assert not await store.record_full_read(approval_id, reader="UA", digest=DIGEST)

    assert await store.has_read_in_full(approval_id, reader="UA", digest=DIGEST)
    assert not await store.has_read_in_full(approval_id, reader="UB", digest=DIGEST)
    assert not await store.has_read_in_full(approval_id, reader="UA", digest=NEW_DIGEST)
    events = [e for e in await store.audit_events() if e.kind == "read_in_full"]
    assert [(e.actor, e.approval_id, e.run_id, dict(e.detail)) for e in events] == [
        ("UA", approval_id, "run-1", {"digest": DIGEST})
    ]
    assert (await store.verify_audit()).ok


async def test_a_read_of_an_unknown_approval_is_refused(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="no approval with id 'nope'"):
        await store.record_full_read("nope", reader="UA", digest=DIGEST)
    assert [e for e in await store.audit_events() if e.kind == "read_in_full"] == []
