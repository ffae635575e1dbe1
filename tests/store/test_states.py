"""StoreRunStates: an AgentRuntime's sessions as sealed runs in the store, on both engines."""

from __future__ import annotations

from bot.runtime import Agent, AgentRuntime, RunState, ScriptedModel, tool
from store import SqliteStore
from store.journal import StoreJournal
from store.states import StoreRunStates


def deploy_agent(effects: list[str]) -> Agent:
    @tool(needs_approval=True, replay_policy="idempotent")
    async def deploy_release(service: str) -> str:
        effects.append(service)
        return f"deployed {service}"

    script = ScriptedModel([[("deploy_release", {"service": "api"})], "finished"])
    return Agent(name="ops", instructions="", tools=[deploy_release], model=script)


async def test_a_session_is_a_sealed_run_paused_then_completed(store: SqliteStore) -> None:
    effects: list[str] = []
    runtime = AgentRuntime(
        deploy_agent(effects),
        states=StoreRunStates(store),
        journal=StoreJournal(store, owner="runtime"),
    )
    paused = await runtime.run("deploy api")
    run = await store.get_run(paused.run_id)
    assert run is not None
    assert (run.status, run.origin, run.agent_name) == ("paused", "terminal", "ops")
    assert RunState.from_json(await store.load_run_state(paused.run_id)).get_interruptions() == (
        paused.pending
    )

    done = await runtime.approve(paused.pending[0], resume=True)
    assert done is not None
    assert done.final_output == "finished"
    finished = await store.get_run(paused.run_id)
    assert finished is not None
    assert (finished.status, finished.version > run.version) == ("completed", True)
    assert effects == ["api"]
    [entry] = await store.ledger_entries(run_id=paused.run_id)
    assert entry.state == "succeeded"
    assert await StoreRunStates(store).load("no-such-run") is None
