"""A paused state written by an older SDK (openai-agents 0.23.1, state schema 1.18;
tests/fixtures/openai_agents/make_fixture.py) resumes with the installed one: decided,
its digests re-checked against the restored SDK state, run once through the ledger."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bot.adapters.openai_agents import SDK_SCHEMA_VERSION, SDK_VERSION, build_ops_openai_agent
from bot.demo import EffectsFile, ops_dependencies
from bot.runtime import ExternalRunState, InMemoryJournal

FIXTURE = Path(__file__).parent.parent / "fixtures" / "openai_agents" / "paused_0.23.1.json"
FROZEN = "ab28788b4e226849e3153671bcf50889bbe7caba1e85f7956610db7d87c57a79"


def test_the_fixture_is_unchanged() -> None:
    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() == FROZEN


def fixture_state() -> ExternalRunState:
    return ExternalRunState.from_json(FIXTURE.read_text())


async def test_a_state_from_sdk_0_23_1_resumes_with_the_installed_sdk(effects_path: Path) -> None:
    state = fixture_state()
    assert (state.engine.version, state.engine.schema_version) == ("0.23.1", "1.18")
    calls = {call.tool_name: call for call in state.get_interruptions()}
    state.approve(calls["deploy_release"], approver_id="U0APPROVE", reason="upgrade test")
    state.reject(calls["restart_service"], message="No restart today.", approver_id="U0APPROVE")

    engine = build_ops_openai_agent()
    result = await engine.run(state, journal=InMemoryJournal(), dependencies=ops_dependencies())

    assert result.outcome == "completed"
    assert result.final_output is not None
    assert "deployed payments 1.2.3" in result.final_output
    assert "No restart today." in result.final_output
    lines = await EffectsFile(effects_path).lines()
    assert [line["execution_key"] for line in lines] == [calls["deploy_release"].execution_key]
    assert lines[0]["arguments_digest"] == state.call_digest(calls["deploy_release"])
    # what the run stores now is written by the installed SDK
    assert result.state.engine is not None
    assert (result.state.engine.version, result.state.engine.schema_version) == (
        SDK_VERSION,
        SDK_SCHEMA_VERSION,
    )
