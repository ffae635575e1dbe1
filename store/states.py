"""StoreRunStates: where an AgentRuntime (bot.runtime.sessions) keeps its sessions, in
the store: each session a run row with its state sealed (AES-GCM, as every run's), saved
by compare-and-set on the row's version, so two runtimes saving the same session at
once do not both win (ConflictError for the second).

Give it a database of its own. A database the bot serves is the bot's: its recovery
takes a paused run it finds there with nothing left to decide and resumes it itself.
"""

from __future__ import annotations

from typing import Protocol

from store.api import RunStore
from store.records import RunOrigin, RunStatus


class SessionState(Protocol):
    """What the store reads of a run core state (bot.runtime.RunState)."""

    run_id: str
    agent_name: str
    agent_version: str

    @property
    def schema_version(self) -> str: ...

    def to_json(self) -> str: ...


class StoreRunStates:
    """The RunStates of bot.runtime.sessions on the store's runs."""

    def __init__(self, store: RunStore, *, origin: RunOrigin = "terminal") -> None:
        self._store = store
        self._origin: RunOrigin = origin

    async def load(self, run_id: str) -> str | None:
        if await self._store.get_run(run_id) is None:
            return None
        return await self._store.load_run_state(run_id)

    async def save(self, state: SessionState, *, finished: bool) -> None:
        status: RunStatus = "completed" if finished else "paused"
        run = await self._store.get_run(state.run_id)
        if run is None:
            await self._store.create_run(
                run_id=state.run_id,
                agent_name=state.agent_name,
                agent_version=state.agent_version,
                schema_version=state.schema_version,
                state_json=state.to_json(),
                status=status,
                origin=self._origin,
            )
            return
        await self._store.save_run_state(
            state.run_id,
            expected_version=run.version,
            state_json=state.to_json(),
            status=status,
            schema_version=state.schema_version,
        )
