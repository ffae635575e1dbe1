"""Frozen fixtures: every released schema version (and the legacy form) loads and resumes.

Fixtures are never edited once released; the digests below catch an accidental edit.
Add a new fixture for a new schema version instead.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bot.runtime import SUPPORTED_SCHEMA_VERSIONS, ApprovedCall, InMemoryJournal, Runner, RunState
from tests.runtime.runtime_support import Ops, results_by_call

FIXTURES = Path(__file__).parent.parent / "fixtures" / "run_state"
FROZEN = {
    "v1.0_paused.json": "53f12525c27e800198ec8f8cdb5bf65608f12e27a1095892d57792f6d14733c7",
    "legacy_unversioned.json": "d07194b351702bbd2142eb7b24d1a668d20cf1ffad7eb3d301c190dc8f898ccf",
    "v1.1_paused.json": "7296ab3d346bb0704729ee6a402c0eb9de3364e9ae06c13afad2601799daf37b",
}


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_released_fixtures_are_unchanged(name: str) -> None:
    assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == FROZEN[name]


@pytest.mark.parametrize("version", sorted(SUPPORTED_SCHEMA_VERSIONS))
def test_every_supported_version_has_a_fixture(version: str) -> None:
    assert (FIXTURES / f"v{version}_paused.json").is_file()
    assert f"v{version}_paused.json" in FROZEN


async def test_v1_0_fixture_loads_and_resumes_to_completion(ops: Ops) -> None:
    state = RunState.from_json((FIXTURES / "v1.0_paused.json").read_text())
    assert (state.agent_name, state.agent_version, state.current_turn) == ("ops", "1", 2)
    assert state.context == {
        "requested_by": "U01ABCDEF",
        "channel": "C0123456789",
        "ticket": "OPS-4411",
    }
    deploy, restart = state.pending_calls()
    assert state.decision_for(deploy) == ApprovedCall()
    assert state.approval_metadata[deploy.tool_call_id].approver_id == "U024BE7LH"
    assert state.get_interruptions() == [restart]
    state.reject(restart, message="Restart after the deploy settles.", approver_id="U9")

    # The fixture holds two model turns; the script's third step answers the resume.
    earlier_turn = [("get_status", {"service": "api"})]
    agent = ops.agent([earlier_turn, earlier_turn, "Deployed api 1.4.2; restart refused."])
    result = await Runner.arun(agent, state, journal=InMemoryJournal())

    assert result.outcome == "completed"
    assert result.final_output == "Deployed api 1.4.2; restart refused."
    assert [(e.tool, e.arguments, e.execution_key) for e in ops.effects] == [
        ("deploy_release", {"service": "api", "version": "1.4.2"}, deploy.execution_key)
    ]
    results = results_by_call(result.to_state().history)
    assert results[restart.tool_call_id] == ("Restart after the deploy settles.", True)


async def test_legacy_fixture_loads_and_resumes_to_completion(ops: Ops) -> None:
    state = RunState.from_json((FIXTURES / "legacy_unversioned.json").read_text())
    assert (state.agent_name, state.agent_version, state.max_turns) == ("ops", "1", 10)
    assert state.get_interruptions() == []  # both were decided by the legacy build
    metadata = state.approval_metadata["call_0"]
    assert metadata.timestamp.isoformat() == "2026-10-02T16:40:11.204518+00:00"
    assert state.approval_metadata["call_1"].reason == "no ticket attached"

    agent = ops.agent(
        [[("get_status", {"service": "billing"})], "Deployed billing; pool unchanged."]
    )
    result = await Runner.arun(agent, state)

    assert result.outcome == "completed"
    assert [(e.tool, e.arguments) for e in ops.effects] == [
        ("deploy_release", {"service": "billing", "version": "3.0.1"})
    ]
    assert results_by_call(result.to_state().history)["call_1"] == (
        "Pool changes need a ticket.",
        True,
    )
    assert RunState.from_json(result.to_state().to_json()).to_dict()["$schemaVersion"] == "1.1"


def test_v1_1_fixture_keeps_the_digests_its_cards_showed() -> None:
    """A change to the digest's message or key handling would void every pending
    approval of every deployment: these digests are frozen with the fixture."""
    state = RunState.from_json((FIXTURES / "v1.1_paused.json").read_text())
    deploy, restart = state.pending_calls()
    assert state.legacy_digest_calls == frozenset()
    assert state.call_digest(deploy) == (
        "ae5dcee486dd49ddc6b000d771399de90876d8d37cd41ecba088e3c4073326ad"
    )
    assert state.call_digest(restart) == (
        "76294e3d0da597a6300acaea1436e9e69a6047e965486a62929271b7aa023314"
    )
