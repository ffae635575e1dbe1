"""AgentRuntime: the Runner with each run's state kept for you, by session id.

    runtime = AgentRuntime(agent, states=..., journal=...)
    result = await runtime.run("create an order for c-42")
    for pending in result.pending:                  # status "approval" or "uncertain"
        await runtime.approve(pending)              # or decline / resolve_tool
    result = await runtime.resume(result.run_id)      # the session id is the run id

A session is one run; its id is the run id. Every decision (`approve`, `decline`,
`resolve_tool`) takes a pending call or its execution key, loads the state of the
session that waits on it, takes the decision on it (RunState.approve / reject / resolve)
and stores it again; with `resume=True` the run then continues at once and its
RunResult is returned. A run with several pending calls takes one decision per call,
then one `resume`. Nothing here runs a tool: the Runner does, through the journal, so
a call runs at most once per execution key however often a session is resumed.

States are kept by a `RunStates` (in memory unless given: `InMemoryRunStates`; the
bot's store offers `store.states.StoreRunStates`), sealed or not as that store keeps
them. The runtime finds the session of a call among the sessions it ran or loaded; for
another one, pass `session_id=`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bot.errors import InputError, UnknownExecutionKey
from bot.runtime.agent import Agent
from bot.runtime.decisions import PendingCall, Resolution, ToolResult
from bot.runtime.journal import InMemoryJournal, Journal
from bot.runtime.result import RunResult
from bot.runtime.runner import Runner
from bot.runtime.state import RunState


class RunStates(Protocol):
    """Where an AgentRuntime keeps its sessions' states (JSON text, by run id)."""

    async def load(self, run_id: str) -> str | None:
        """The stored state of a run, or None when there is none."""
        ...

    async def save(self, state: RunState, *, finished: bool) -> None:
        """Store the state of a run (`finished`: it completed, nothing waits)."""
        ...


class InMemoryRunStates:
    """RunStates in this process's memory (gone with it)."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}

    async def load(self, run_id: str) -> str | None:
        return self._states.get(run_id)

    async def save(self, state: RunState, *, finished: bool) -> None:
        self._states[state.run_id] = state.to_json()


class AgentRuntime:
    """Runs `agent` and keeps its sessions (see the module doc). `dependencies` reach
    tools (`current_tool_call().dependencies`) and are never stored."""

    def __init__(
        self,
        agent: Agent,
        *,
        states: RunStates | None = None,
        journal: Journal | None = None,
        dependencies: Mapping[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.states: RunStates = states if states is not None else InMemoryRunStates()
        self.journal: Journal = journal if journal is not None else InMemoryJournal()
        self._dependencies = dict(dependencies or {})
        self._session_of: dict[str, str] = {}  # execution key -> run id
        self._locks: dict[str, asyncio.Lock] = {}

    # -- running --------------------------------------------------------------------------

    async def run(
        self, task: str, *, context: Any = None, max_turns: int | None = None
    ) -> RunResult:
        """Start a session on `task`; its result (paused: `result.pending` waits)."""
        result = await Runner.arun(
            self.agent,
            task,
            context=context,
            max_turns=max_turns,
            journal=self.journal,
            dependencies=self._dependencies,
        )
        await self._keep(result)
        return result

    async def resume(self, session_id: str, *, context: Any = None) -> RunResult:
        """Continue a session from its stored state (its decisions applied)."""
        async with self._lock(session_id):
            return await self._resume(session_id, context=context)

    async def load(self, session_id: str) -> RunState:
        """A session's stored state (InputError when there is none); its pending calls
        can be decided by this runtime from then on."""
        text = await self.states.load(session_id)
        if text is None:
            raise InputError(f"no session {session_id!r} is stored")
        state = RunState.from_json(text)
        self._remember(state)
        return state

    # -- decisions --------------------------------------------------------------------------

    async def approve(
        self,
        pending: PendingCall | str,
        *,
        resume: bool = False,
        session_id: str | None = None,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> RunResult | None:
        """Approve a pending call (or its execution key); `resume=True` continues the
        run and returns its result."""
        return await self._decide(
            pending,
            session_id,
            resume,
            lambda state: state.approve(
                pending, always=always, approver_id=approver_id, reason=reason
            ),
        )

    async def decline(
        self,
        pending: PendingCall | str,
        *,
        resume: bool = False,
        session_id: str | None = None,
        message: str | None = None,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> RunResult | None:
        """Reject a pending call: the model sees `message` (or a neutral default)."""
        return await self._decide(
            pending,
            session_id,
            resume,
            lambda state: state.reject(
                pending, message=message, always=always, approver_id=approver_id, reason=reason
            ),
        )

    async def resolve_tool(
        self,
        pending: PendingCall | str,
        resolution: Resolution | None = None,
        *,
        result: str | ToolResult | None = None,
        retry: bool = False,
        abort: bool = False,
        resume: bool = False,
        session_id: str | None = None,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> RunResult | None:
        """Reconcile an uncertain call with exactly one of a resolution object,
        `result=` (a verified outcome), `retry=True` or `abort=True` (RunState.resolve)."""
        return await self._decide(
            pending,
            session_id,
            resume,
            lambda state: state.resolve(
                pending,
                resolution,
                result=result,
                retry=retry,
                abort=abort,
                approver_id=approver_id,
                reason=reason,
            ),
        )

    # -- the sessions -----------------------------------------------------------------------

    async def _decide(
        self,
        pending: PendingCall | str,
        session_id: str | None,
        resume: bool,
        decide: Callable[[RunState], None],
    ) -> RunResult | None:
        run_id = session_id or self._session_for(pending)
        async with self._lock(run_id):
            state = await self.load(run_id)
            decide(state)
            await self.states.save(state, finished=False)
            if not resume:
                return None
            return await self._resume(run_id, context=None)

    async def _resume(self, run_id: str, *, context: Any) -> RunResult:
        state = await self.load(run_id)
        result = await Runner.arun(
            self.agent,
            state,
            context=context,
            journal=self.journal,
            dependencies=self._dependencies,
        )
        await self._keep(result)
        return result

    async def _keep(self, result: RunResult) -> None:
        state = result.to_state()
        await self.states.save(state, finished=result.state is None)
        self._remember(state)

    def _remember(self, state: RunState) -> None:
        for call in state.pending_calls():
            self._session_of[call.execution_key] = state.run_id

    def _session_for(self, pending: PendingCall | str) -> str:
        key = pending.execution_key if isinstance(pending, PendingCall) else pending
        run_id = self._session_of.get(key) if isinstance(key, str) else None
        if run_id is None:
            raise UnknownExecutionKey(
                f"no session of this runtime waits on execution key {key!r}; pass "
                "session_id=, or load the session first (await runtime.load(session_id))"
            )
        return run_id

    def _lock(self, run_id: str) -> asyncio.Lock:
        return self._locks.setdefault(run_id, asyncio.Lock())
