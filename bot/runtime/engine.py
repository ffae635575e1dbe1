"""The engine seam: what the service needs of an agent and of a run's state, whichever
engine runs them.

Several engines implement it: the bot's own run core (`Agent` and `RunState`, run by
the `Runner`), adapters for agents built on another framework (bot.adapters: the OpenAI
Agents SDK, LangGraph, Pydantic AI) and the MCP gateway (bot.mcp), whose runs keep an
`ExternalRunState`. The service starts,
stores, pauses, decides and resumes both with the same code:

- an `AgentEngine` is registered in the `AgentRegistry` by name and version; it starts a
  run's state, runs a state until it completes or pauses (every call with effects through
  the given journal) and names its tools for cards and the policy;
- an `AgentRun` is the state the store keeps sealed: its pending calls with execution
  keys, their keyed digests, the decisions people take, and its JSON.

`read_run_state(text)` (bot.runtime.stored_state) reads any stored state: the engine
that wrote it is named inside.

An engine other than the run core lets approvers change a call's arguments before they
approve it ("approve with changes") only by also being an `ArgumentEditor` (with
`amendable` true): it says for which calls it can check new arguments (its answer is
kept with the call's card), checks them, and returns the state with them. This is the
one way for every engine but the run core: the LangGraph and Pydantic AI adapters and
the MCP gateway are editors; the OpenAI Agents SDK's adapter is not (`amendable` false).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from bot.runtime.decisions import Decision, PendingCall, Resolution
from bot.runtime.journal import Journal

ENGINE_KEY = "engine"
"""The top-level key of a state written by an engine other than the run core."""


@dataclass(frozen=True, kw_only=True)
class EngineInfo:
    """The engine that writes a run's state when it is not the run core: its name
    ("openai-agents"), its version ("0.24.0") and its state's schema version ("1.21")."""

    name: str
    version: str
    schema_version: str


RunOutcome = Literal["completed", "paused", "max_turns"]
"""How one run of an engine ended (not a stored run's status, which the service keeps)."""


@dataclass(frozen=True, kw_only=True)
class EngineResult:
    """`final_output` is set when completed; `interruptions` lists the calls a human
    must decide when paused; `state` is the run's state to store or resume."""

    final_output: str | None
    interruptions: list[PendingCall]
    state: AgentRun
    outcome: RunOutcome


class ToolView(Protocol):
    """What cards and the policy know of a tool."""

    @property
    def name(self) -> str: ...

    @property
    def review_fields(self) -> tuple[str, ...] | None: ...


class AgentRun(Protocol):
    """A run's durable state, as the service drives it (RunState, ExternalRunState)."""

    run_id: str
    agent_name: str
    agent_version: str

    @property
    def schema_version(self) -> str:
        """The version of this state's own JSON form (what the run row records)."""
        ...

    @property
    def engine(self) -> EngineInfo | None:
        """The engine that wrote it; None for the run core."""
        ...

    @property
    def final_output(self) -> str | None: ...

    def pending_calls(self) -> list[PendingCall]: ...

    def get_interruptions(self) -> list[PendingCall]: ...

    def decision_for(self, call: PendingCall | str) -> Decision | None:
        """The decision that applies to a pending call; None while undecided."""
        ...

    def call_digest(self, call: PendingCall | str) -> str: ...

    def approve(
        self,
        call: PendingCall | str,
        *,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None: ...

    def reject(
        self,
        call: PendingCall | str,
        *,
        message: str | None = None,
        always: bool = False,
        approver_id: str | None = None,
        reason: str | None = None,
        decided_at: datetime | None = None,
    ) -> None: ...

    def resolve(
        self,
        call_or_key: PendingCall | str,
        resolution: Resolution,
        *,
        approver_id: str | None = None,
        reason: str | None = None,
    ) -> None: ...

    def append_user_message(self, text: str) -> None: ...

    def to_json(self) -> str: ...


@runtime_checkable
class AgentEngine(Protocol):
    """An agent the service can run: registered by name and version (bump the version
    whenever a paused run must not silently pick up a change)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def amendable(self) -> bool:
        """Whether an approver may change a call's arguments before approving it (the
        run core: its tools check them; any other engine: call by call, as an
        `ArgumentEditor`)."""
        ...

    def tool_names(self) -> list[str]: ...

    def tool_named(self, name: str) -> ToolView | None: ...

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> AgentRun:
        """The state of a run not started yet (ContextSerializationError for a context
        that cannot be stored)."""
        ...

    def check_state(self, state: AgentRun) -> None:
        """StateUnreadableError when this engine cannot run `state` (a state written by a
        newer engine, or naming an agent or tool this one lacks)."""
        ...

    async def run(
        self,
        state: AgentRun,
        *,
        journal: Journal,
        dependencies: Mapping[str, Any],
        max_tool_calls_per_turn: int | None = None,
    ) -> EngineResult:
        """Run `state` (decisions applied) until it completes or pauses; every call that
        needed approval goes through `journal`. The given state is not modified."""
        ...


@runtime_checkable
class ArgumentEditor(Protocol):
    """An engine whose calls approvers may change before approving them (its `amendable`
    is true). The service merges an approver's edit over the real arguments (a redacted
    value left as shown keeps its real value); the engine has the last word on what fits
    the tool. `can_amend` is asked when the call's card is made (the answer is kept with
    the card: Approve with changes is offered, or the card says why not) and again when
    an approver submits changes."""

    def can_amend(self, state: AgentRun, call: PendingCall) -> bool:
        """Whether new arguments for this call can be checked (its tool's schema, as the
        state knows it, allows that)."""
        ...

    def check_arguments(
        self, state: AgentRun, call: PendingCall, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The arguments as the call's tool would take them; InputError naming what does
        not fit."""
        ...

    def amended(self, state: AgentRun, tool_call_id: str, arguments: Mapping[str, Any]) -> AgentRun:
        """A copy of `state` whose call waiting for approval has these arguments (its
        digest changes with them); `state` itself is left as it was."""
        ...


def engine_tool_names(engines: Sequence[AgentEngine]) -> list[str]:
    """Every tool name of these engines (what a policy's [tools.*] tables may name)."""
    return sorted({name for engine in engines for name in engine.tool_names()})
