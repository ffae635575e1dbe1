"""The RunState serialization reference, run as written: its quick start and samples
verbatim (only the imports are ours), and the contract it states.

Each sample's body is kept as the reference writes it inside a small function (the
`def` line, its typed parameters and a `return` are the only scaffolding, so mypy checks
each sample against the API as well): `agent` and `db` are what the
sample's reader has, here an agent with a scripted model and a `db` on a real SQLite
file. Where our RunState deliberately differs from the reference (a `$schemaVersion`
envelope, timezone-aware UTC timestamps), the test says so and checks our behaviour."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    Agent,
    ApprovalMetadata,
    PendingCall,
    RejectedCall,
    Runner,
    RunResult,
    RunState,
    ScriptedModel,
    tool,
)

# -- the reader's side: an agent and an application database ---------------------------


def user_admin(deleted: list[str], script: list[Any] | None = None) -> Agent:
    @tool(needs_approval=True)
    def delete_user(user_id: str) -> str:
        """Delete a user account."""
        deleted.append(user_id)
        return f"deleted {user_id}"

    steps = script or [[("delete_user", {"user_id": "u-1"})], "Deleted u-1."]
    return Agent(
        name="user-admin", instructions="Administer users.", tools=[delete_user],
        model=ScriptedModel(steps),
    )  # fmt: skip


class PendingApprovals:
    """The reader's own table of paused runs (a real SQLite file)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE pending (id INTEGER PRIMARY KEY, state TEXT NOT NULL)")

    async def save_pending_approval(self, state_json: str) -> int:
        cursor = self._db.execute("INSERT INTO pending (state) VALUES (?)", (state_json,))
        self._db.commit()
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    async def get_pending_approval(self, approval_id: int) -> str:
        [(text,)] = self._db.execute("SELECT state FROM pending WHERE id = ?", (approval_id,))
        return str(text)

    def count(self) -> int:
        [(rows,)] = self._db.execute("SELECT COUNT(*) FROM pending")
        return int(rows)


@pytest.fixture
def db(tmp_path: Path) -> PendingApprovals:
    return PendingApprovals(tmp_path / "app.db")


# -- the quick start, verbatim ---------------------------------------------------------


async def first_run(agent: Agent, db: PendingApprovals) -> None:
    # First run — may halt for HITL approval
    result = await Runner.arun(agent, "Delete user u-1")
    if result.state is not None:
        await db.save_pending_approval(result.state.to_json())


async def later(agent: Agent, db: PendingApprovals, id: int) -> RunResult:
    # Later — load, approve with audit trail, resume
    state = RunState.from_json(await db.get_pending_approval(id))
    deferred = state.deferred_tool_requests.approvals[0]
    state.approve(
        deferred,
        approver_id="alice@example.com",
        reason="authorized per change CR-1234",
    )
    result = await Runner.arun(agent, state)
    return result  # noqa: RET504  (the sample ends with this assignment)


async def test_the_quick_start_pauses_stores_approves_with_audit_and_resumes(
    db: PendingApprovals,
) -> None:
    deleted: list[str] = []
    agent = user_admin(deleted)

    await first_run(agent, db)
    assert (db.count(), deleted) == (1, [])  # paused before the effect, stored

    result = await later(agent, db, 1)

    assert (result.outcome, result.final_output, deleted) == ("completed", "Deleted u-1.", ["u-1"])
    [(call_id, note)] = result.to_state().approval_metadata.items()
    assert (note.approver_id, note.reason) == ("alice@example.com", "authorized per change CR-1234")
    assert note.timestamp.tzinfo is UTC
    assert call_id == "call_0_0"


async def test_copying_the_quick_start_never_stores_a_finished_run(db: PendingApprovals) -> None:
    await first_run(user_admin([], script=["Nothing to delete."]), db)
    assert db.count() == 0  # finished: result.state is None


# -- approve / reject with audit fields, verbatim --------------------------------------


def decide_both(state: RunState, deferred_call: PendingCall) -> None:
    state.approve(deferred_call, approver_id="alice@example.com", reason="ok")


def reject_sample(state: RunState, deferred_call: PendingCall) -> None:
    state.reject(
        deferred_call,
        message="Not authorized for this resource",  # shown to the LLM
        approver_id="bob@example.com",  # audit only
        reason="policy violation: tier-0 write",  # audit only
    )


async def test_message_reaches_the_model_and_reason_does_not() -> None:
    deleted: list[str] = []
    agent = user_admin(deleted)
    paused = await Runner.arun(agent, "Delete user u-1")
    assert paused.state is not None
    state = paused.state
    [deferred_call] = state.deferred_tool_requests.approvals

    reject_sample(state, deferred_call)
    assert state.decision_for(deferred_call) == RejectedCall(
        message="Not authorized for this resource"
    )
    done = await Runner.arun(agent, state)

    assert deleted == []
    model = agent.model
    assert isinstance(model, ScriptedModel)
    seen = orjson.dumps(model.requests[-1].history).decode()
    assert "Not authorized for this resource" in seen
    assert "policy violation" not in seen
    assert "bob@example.com" not in seen
    note = done.to_state().approval_metadata[deferred_call.tool_call_id]
    assert (note.approver_id, note.reason) == ("bob@example.com", "policy violation: tier-0 write")


async def test_without_approver_or_reason_the_metadata_is_left_untouched() -> None:
    paused = await Runner.arun(user_admin([]), "Delete user u-1")
    assert paused.state is not None
    paused.state.approve(paused.state.deferred_tool_requests.approvals[0])
    assert paused.state.approval_metadata == {}

    again = await Runner.arun(user_admin([]), "Delete user u-1")
    assert again.state is not None
    decide_both(again.state, again.state.deferred_tool_requests.approvals[0])
    assert list(again.state.approval_metadata) == ["call_0_0"]


# -- ApprovalMetadata as the reference lists it ----------------------------------------


def test_approval_metadata_has_the_listed_fields_and_defaults() -> None:
    fields = {field.name: field for field in dataclasses.fields(ApprovalMetadata)}
    assert list(fields) == ["approver_id", "reason", "timestamp"]
    empty = ApprovalMetadata()
    assert (empty.approver_id, empty.reason) == (None, None)
    # ours: "now" in UTC, timezone-aware (the reference's datetime.now is local and naive)
    assert empty.timestamp.tzinfo is UTC
    assert datetime.now(UTC) - empty.timestamp < timedelta(minutes=1)
    assert ApprovalMetadata("alice", "ok").approver_id == "alice"


# -- to_json / from_json and the persisted shape ---------------------------------------


async def test_json_and_dict_round_trips_carry_our_version_envelope() -> None:
    paused = await Runner.arun(user_admin([]), "Delete user u-1")
    state = paused.to_state()
    state.approve(state.get_interruptions()[0], approver_id="alice", reason="ok")

    text = state.to_json()
    assert orjson.loads(text) == state.to_dict()  # to_json is the JSON of to_dict
    # ours differs on purpose: every payload names its schema version
    assert state.to_dict()["$schemaVersion"] == CURRENT_SCHEMA_VERSION
    assert RunState.from_json(text).to_json() == text
    assert RunState.from_dict(state.to_dict()).to_json() == text


async def test_unknown_keys_are_ignored_in_versioned_and_legacy_payloads() -> None:
    paused = await Runner.arun(user_admin([]), "Delete user u-1")
    payload = paused.to_state().to_dict()
    payload["added_by_a_later_build"] = {"anything": [1, 2]}
    payload["pending_calls"][0]["added_later"] = True
    payload["approval_metadata"] = {
        "call_0_0": {"approver_id": "a", "reason": None, "timestamp": "2026-01-05T09:00:00+00:00",
                     "added_later": 1}
    }  # fmt: skip

    versioned = RunState.from_dict(payload)
    assert versioned.get_interruptions() == paused.interruptions
    assert "added_by_a_later_build" not in versioned.to_dict()

    legacy = {key: value for key, value in payload.items() if key != "$schemaVersion"}
    legacy.pop("digest_key")
    legacy.pop("legacy_digest_calls")
    assert RunState.from_dict(legacy).pending_calls()[0].tool_name == "delete_user"


def test_a_legacy_payload_lacking_later_fields_loads_with_their_defaults() -> None:
    old = {"run_id": "r-1", "history": [{"type": "user", "content": "hi"}]}
    state = RunState.from_dict(old)
    assert (state.agent_version, state.max_turns, state.context, state.pending_calls()) == (
        "1",
        10,
        None,
        [],
    )
