"""An operator's hold on a run (its pause): set and released once each, audited in the
same transaction, never moving the run's status or version; on both engines."""

from __future__ import annotations

import pytest

from bot.errors import InputError
from store import SqliteStore
from tests.store.store_helpers import make_run


async def test_a_hold_is_set_once_and_released_once_with_its_audit(store: SqliteStore) -> None:
    await make_run(store)
    before = await store.get_run("run-1")
    assert before is not None
    assert (before.held, before.held_by) == (False, None)

    held = await store.set_run_hold("run-1", actor="U-OPS", reason="incident 42", via="cli")
    assert held is not None
    assert (held.held, held.held_by, held.hold_reason) == (True, "U-OPS", "incident 42")
    assert (held.status, held.version) == (before.status, before.version)
    assert await store.set_run_hold("run-1", actor="U-2", reason="again") is None  # held already

    released = await store.set_run_hold("run-1", actor="U-2", reason=None)
    assert released is not None
    assert (released.held, released.held_by, released.hold_reason) == (False, None, None)
    assert await store.set_run_hold("run-1", actor="U-2", reason=None) is None  # not held

    events = [e for e in await store.audit_events(run_id="run-1") if e.kind.endswith("paused")]
    assert [(e.kind, e.actor, e.detail) for e in events] == [
        ("paused", "U-OPS", {"reason": "incident 42", "via": "cli"}),
        ("unpaused", "U-2", {}),
    ]


async def test_a_finished_run_is_not_held_and_an_unknown_one_is_an_error(
    store: SqliteStore,
) -> None:
    await make_run(store)
    assert await store.transition_run("run-1", expected_status="paused", new_status="completed")
    assert await store.set_run_hold("run-1", actor="U-OPS", reason="late") is None
    with pytest.raises(InputError, match="no run"):
        await store.set_run_hold("nope", actor="U-OPS", reason="x")


async def test_a_state_saved_while_held_keeps_the_hold(store: SqliteStore) -> None:
    await make_run(store)
    held = await store.set_run_hold("run-1", actor="U-OPS", reason="look first")
    assert held is not None
    saved = await store.save_run_state(
        "run-1", expected_version=held.version, state_json='{"n": 2}', status="paused",
        schema_version="1.0",
    )  # fmt: skip
    assert (saved.held_by, saved.version) == ("U-OPS", held.version + 1)
