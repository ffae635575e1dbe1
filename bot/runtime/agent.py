"""Agents and the registry that rebuilds them by name and version.

An agent definition never crosses the wire: a paused RunState names its agent and
version, and the worker that resumes it gets the same agent from its registry (or
refuses, naming what it has).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import AgentNotRegisteredError, ConfigError, StateUnreadableError
from bot.runtime.context import ContextDeserializer, ContextSerializer, serialize_context
from bot.runtime.engine import AgentEngine, AgentRun, EngineResult
from bot.runtime.journal import Journal
from bot.runtime.model import Model, ToolSpec
from bot.runtime.result import PauseCheck
from bot.runtime.state import RunState
from bot.runtime.tools import AgentTools, Tool


@dataclass(frozen=True, init=False)
class Agent:
    """An agent: instructions, tools and a model, identified by name and version.

    Bump `version` whenever its tools or behaviour change in a way a paused run must
    not silently pick up. `strict_context` (default) refuses a run context that is
    neither a mapping nor handled by `context_serializer`. The tools given become an
    `AgentTools`: `agent.tools.register(...)` adds one while the agent is built."""

    name: str
    instructions: str
    tools: AgentTools
    model: Model
    version: str
    context_serializer: ContextSerializer | None
    context_deserializer: ContextDeserializer | None
    strict_context: bool

    def __init__(
        self,
        *,
        name: str,
        instructions: str,
        tools: Sequence[Tool],
        model: Model,
        version: str = "1",
        context_serializer: ContextSerializer | None = None,
        context_deserializer: ContextDeserializer | None = None,
        strict_context: bool = True,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ConfigError("an agent needs a non-empty name")
        if not version or not isinstance(version, str):
            raise ConfigError(f"agent {name!r}: version must be a non-empty string")
        fields = {
            "name": name,
            "instructions": instructions,
            "tools": AgentTools(tuple(tools), owner=name),
            "model": model,
            "version": version,
            "context_serializer": context_serializer,
            "context_deserializer": context_deserializer,
            "strict_context": strict_context,
        }
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def tool_named(self, name: str) -> Tool | None:
        return self.tools.named(name)

    def tool_specs(self) -> list[ToolSpec]:
        return [item.spec() for item in self.tools]

    # -- the engine seam (bot.runtime.engine.AgentEngine) --------------------------------

    @property
    def amendable(self) -> bool:
        """Approvers may change a call's arguments before approving it."""
        return True

    def tool_names(self) -> list[str]:
        return self.tools.names()

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> RunState:
        return RunState(
            run_id=run_id,
            agent_name=self.name,
            agent_version=self.version,
            history=[{"type": "user", "content": task}],
            context=serialize_context(
                context, serializer=self.context_serializer, strict=self.strict_context
            ),
        )

    def check_state(self, state: AgentRun) -> None:
        if not isinstance(state, RunState):
            raise StateUnreadableError(
                f"run {state.run_id} was written by another engine "
                f"({state.engine.name if state.engine else 'unknown'}); agent {self.name!r} "
                f"version {self.version!r} runs on the bot's run core"
            )

    async def run(
        self,
        state: AgentRun,
        *,
        journal: Journal,
        dependencies: Mapping[str, Any],
        max_tool_calls_per_turn: int | None = None,
        pause: PauseCheck | None = None,
    ) -> EngineResult:
        """The engine seam's run, plus what only the run core offers: `pause`, asked
        before each model turn and tool call (Runner.arun)."""
        from bot.runtime.runner import Runner  # the Runner runs agents: it imports this

        self.check_state(state)
        assert isinstance(state, RunState)  # checked just above
        result = await Runner.arun(
            self,
            state,
            journal=journal,
            dependencies=dependencies,
            max_tool_calls_per_turn=max_tool_calls_per_turn,
            pause=pause,
        )
        return EngineResult(
            final_output=result.final_output,
            interruptions=result.interruptions,
            state=result.to_state(),
            outcome=result.outcome,
        )


AgentFactory = Callable[[], AgentEngine]


class AgentRegistry:
    """Agents keyed by (name, version): our `Agent`s and any other `AgentEngine` (an
    OpenAI Agents SDK agent through bot.adapters.openai_agents). The first registered
    agent is the default. `unavailable`: agents this registry knows of but cannot run,
    by name, with why (see `note_unavailable`)."""

    def __init__(
        self,
        agents: Iterable[AgentEngine | AgentFactory] = (),
        *,
        unavailable: Mapping[str, str] | None = None,
    ) -> None:
        self._agents: dict[tuple[str, str], AgentEngine] = {}
        self._unavailable: dict[str, str] = dict(unavailable or {})
        for agent in agents:
            self.register(agent)

    def note_unavailable(self, name: str, why: str) -> None:
        """Remember that the agent `name` cannot run here and why (a built-in agent whose
        framework is not installed): asking for it by name then says so, not only that
        no such agent is registered."""
        self._unavailable[name] = why

    @property
    def unavailable(self) -> dict[str, str]:
        """The agents noted unavailable, by name, with why (a copy)."""
        return dict(self._unavailable)

    def register(self, agent_or_factory: AgentEngine | AgentFactory) -> AgentEngine:
        """Register an agent (or a zero-argument factory, called now). Usable as a
        decorator on a factory. Registering the same name and version twice is an error."""
        agent = (
            agent_or_factory if isinstance(agent_or_factory, AgentEngine) else agent_or_factory()
        )
        if not isinstance(agent, AgentEngine):
            raise ConfigError(f"agent factory {agent_or_factory!r} did not return an Agent")
        key = (agent.name, agent.version)
        if key in self._agents:
            raise ConfigError(f"agent {agent.name!r} version {agent.version!r} is registered twice")
        self._agents[key] = agent
        return agent

    def get(self, name: str, version: str) -> AgentEngine:
        """The agent with exactly this name and version, or AgentNotRegisteredError."""
        agent = self._agents.get((name, version))
        if agent is None:
            raise AgentNotRegisteredError(
                f"agent {name!r} version {version!r} is not registered "
                f"(registered: {self.describe()})"
            )
        return agent

    def latest(self, name: str) -> AgentEngine:
        """The most recently registered version of `name` (for starting new runs)."""
        for (agent_name, _), agent in reversed(self._agents.items()):
            if agent_name == name:
                return agent
        why = self._unavailable.get(name)
        if why is not None:
            raise AgentNotRegisteredError(why)
        raise AgentNotRegisteredError(
            f"no agent named {name!r} is registered (registered: {self.describe()})"
        )

    def default(self) -> AgentEngine:
        """The first registered agent."""
        for agent in self._agents.values():
            return agent
        raise AgentNotRegisteredError("no agent is registered")

    def describe(self) -> str:
        if not self._agents:
            return "none"
        return ", ".join(f"{name} v{version}" for name, version in self._agents)

    def __iter__(self) -> Iterator[AgentEngine]:
        return iter(list(self._agents.values()))

    def __len__(self) -> int:
        return len(self._agents)
