"""Paused states written by the oldest supported version of each framework resume with
the installed one: decided, each call's digest re-checked against the restored state,
run once through the ledger (tests/fixtures/*/make_fixture.py wrote them: langgraph
1.0.0 with langgraph-prebuilt 1.0.2, langgraph-checkpoint 2.1.2 and langchain-core
1.0.0; pydantic-ai-slim 2.2.0)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bot.demo import EffectsFile, ops_dependencies
from bot.runtime import AgentEngine, ExternalRunState, InMemoryJournal
from tests.adapters.frameworks.support import needs

FIXTURES = Path(__file__).parents[2] / "fixtures"
FROZEN = {
    "langgraph/paused_1.0.0.json": (
        "bd1f5562bf50af53b9a86b60f29a04617d03254a982ad4ecf0f38650a3c06f14"
    ),
    "pydantic_ai/paused_2.2.0.json": (
        "2074a3a5743c010493589890ad08eea68903a1e5bb659c1d879dd1eeb9d650f5"
    ),
}
CASES = [
    pytest.param("langgraph/paused_1.0.0.json", "1.0.0", marks=needs("langgraph"), id="langgraph"),
    pytest.param(
        "pydantic_ai/paused_2.2.0.json", "2.2.0", marks=needs("pydantic_ai"), id="pydantic-ai"
    ),
]


def engine_for(state: ExternalRunState) -> AgentEngine:
    if state.engine.name == "langgraph":
        from bot.adapters.langgraph import build_ops_langgraph_agent

        return build_ops_langgraph_agent()
    from bot.adapters.pydantic_ai import build_ops_pydantic_agent

    return build_ops_pydantic_agent()


@pytest.mark.parametrize("name", list(FROZEN))
def test_the_fixture_is_unchanged(name: str) -> None:
    assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == FROZEN[name]


@pytest.mark.parametrize(("name", "written_by"), CASES)
async def test_a_state_of_the_oldest_version_resumes_with_the_installed_one(
    name: str, written_by: str, effects_path: Path
) -> None:
    state = ExternalRunState.from_json((FIXTURES / name).read_text())
    assert state.engine.version == written_by
    calls = {call.tool_name: call for call in state.get_interruptions()}
    state.approve(calls["deploy_release"], approver_id="U0APPROVE", reason="upgrade test")
    state.reject(calls["restart_service"], message="No restart today.", approver_id="U0APPROVE")

    engine = engine_for(state)
    result = await engine.run(state, journal=InMemoryJournal(), dependencies=ops_dependencies())

    assert result.outcome == "completed"
    assert result.final_output is not None
    assert "deployed payments 1.2.3" in result.final_output
    assert "No restart today." in result.final_output
    lines = await EffectsFile(effects_path).lines()
    assert [line["execution_key"] for line in lines] == [calls["deploy_release"].execution_key]
    assert lines[0]["arguments_digest"] == state.call_digest(calls["deploy_release"])
    # what the run stores now is written by the installed version
    assert result.state.engine is not None
    assert result.state.engine.version != written_by
