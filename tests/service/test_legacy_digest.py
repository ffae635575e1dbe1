"""Approvals pending from before keyed digests still decide and run, exactly once.

tests/fixtures/pre_keyed_digest holds a database written by the last build with unkeyed
digests and RunState schema 1.0 (see its README): one run of the demo ops agent paused on
`deploy_release` and a `set_config` of a password, each with a pending approval whose
card showed the unkeyed SHA-256. This build opens a copy, migrates the state, and the
approvers' decisions (on the digests their cards showed) run each call once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.canonical import legacy_arguments_digest
from bot.runtime import CURRENT_SCHEMA_VERSION
from tests.service.service_harness import Harness, close_harness, open_service
from tests.states import own_state

FIXTURE = Path(__file__).parent.parent / "fixtures" / "pre_keyed_digest"
FROZEN = {
    "approvals.db": "18548b2ad60be63727639117fd6e62e839740e5cf1e57e5b68fec49761432255",
    "approvals.db.key": "71d8eab796b16b5b190d6cb046c309248343596de188f4fc474fe4d3031d1d58",
    "manifest.json": "863c8e2e5922af43ef176cbd6b66d3c9d7c790a955a48a2ffd42e507a008a8f6",
}
APPROVER = "U0APPROVE"


def test_the_fixture_is_unchanged() -> None:
    for name, digest in FROZEN.items():
        assert hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest() == digest, name


@pytest.fixture
def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURE / "manifest.json").read_text())
    return loaded


@pytest.fixture
def upgraded_db(tmp_path: Path) -> Path:
    """A copy of the pre-upgrade database and its key file (0600, as the store wants)."""
    target = tmp_path / "approvals.db"
    shutil.copyfile(FIXTURE / "approvals.db", target)
    shutil.copyfile(FIXTURE / "approvals.db.key", tmp_path / "approvals.db.key")
    (tmp_path / "approvals.db.key").chmod(0o600)
    return target


async def test_pending_approvals_from_before_the_upgrade_decide_and_run_once(
    upgraded_db: Path, effects_path: Path, manifest: dict[str, Any]
) -> None:
    harness = await open_service(upgraded_db, effects_path)
    try:
        run_id = manifest["run_id"]
        assert manifest["schema_version"] == "1.0"
        state = await own_state(harness.service, run_id)
        calls = {call.tool_call_id: call for call in state.pending_calls()}
        shown = {row["tool_call_id"]: row for row in manifest["approvals"]}
        assert state.legacy_digest_calls == frozenset(shown)
        for call_id, row in shown.items():
            # The digest the old card showed is still the call's digest.
            assert state.call_digest(calls[call_id]) == row["arguments_digest"]
            assert row["arguments_digest"] == legacy_arguments_digest(calls[call_id].arguments)
        # Rows from before execution keys were stored answer their call by tool call id.
        rows = await harness.store.list_approvals(run_id=run_id)
        assert {row.execution_key for row in rows} == {f"call:{call_id}" for call_id in shown}

        for row in manifest["approvals"]:
            await harness.service.decide(
                row["approval_id"],
                approve=True,
                decider=APPROVER,
                reason="approved after the upgrade",
                digest=row["arguments_digest"],
            )
        await harness.service.drain()
        await _ran_once_each(harness, manifest)
        run = await harness.store.get_run(run_id)
        assert run is not None
        assert (run.status, run.schema_version) == ("completed", CURRENT_SCHEMA_VERSION)
    finally:
        await close_harness(harness)

    # A restart (and its recovery) runs nothing again.
    again = await open_service(upgraded_db, effects_path)
    try:
        await again.service.recover()
        await again.service.drain()
        await _ran_once_each(again, manifest)
    finally:
        await close_harness(again)


async def _ran_once_each(harness: Harness, manifest: dict[str, Any]) -> None:
    lines = harness.effect_lines()
    assert sorted(line["tool"] for line in lines) == ["deploy_release", "set_config"]
    by_tool = {row["tool_name"]: row["arguments_digest"] for row in manifest["approvals"]}
    for line in lines:
        assert line["arguments_digest"] == by_tool[line["tool"]]  # what the card showed
    executed = [e for e in await harness.store.audit_events() if e.kind == "executed"]
    assert len(executed) == 2
