"""Agents and the registry that rebuilds them by name and version.

An agent definition never crosses the wire: a paused RunState names its agent and
version, and the worker that resumes it gets the same agent from its registry (or
refuses, naming what it has).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from bot.errors import AgentNotRegisteredError, ConfigError
from bot.runtime.context import ContextDeserializer, ContextSerializer
from bot.runtime.model import Model, ToolSpec
from bot.runtime.tools import Tool


@dataclass(frozen=True, kw_only=True)
class Agent:
    """An agent: instructions, tools and a model, identified by name and version.

    Bump `version` whenever its tools or behaviour change in a way a paused run must
    not silently pick up. `strict_context` (default) refuses a run context that is
    neither a mapping nor handled by `context_serializer`."""

    name: str
    instructions: str
    tools: Sequence[Tool]
    model: Model
    version: str = "1"
    context_serializer: ContextSerializer | None = None
    context_deserializer: ContextDeserializer | None = None
    strict_context: bool = True
    _by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ConfigError("an agent needs a non-empty name")
        if not self.version or not isinstance(self.version, str):
            raise ConfigError(f"agent {self.name!r}: version must be a non-empty string")
        tools = tuple(self.tools)
        by_name: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ConfigError(
                    f"agent {self.name!r}: {item!r} is not a Tool (decorate it with @tool)"
                )
            if item.name in by_name:
                raise ConfigError(f"agent {self.name!r}: two tools are named {item.name!r}")
            by_name[item.name] = item
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "_by_name", by_name)

    def tool_named(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def tool_specs(self) -> list[ToolSpec]:
        return [item.spec() for item in self.tools]


AgentFactory = Callable[[], Agent]


class AgentRegistry:
    """Agents keyed by (name, version). The first registered agent is the default."""

    def __init__(self, agents: Iterable[Agent | AgentFactory] = ()) -> None:
        self._agents: dict[tuple[str, str], Agent] = {}
        for agent in agents:
            self.register(agent)

    def register(self, agent_or_factory: Agent | AgentFactory) -> Agent:
        """Register an agent (or a zero-argument factory, called now). Usable as a
        decorator on a factory. Registering the same name and version twice is an error."""
        agent = agent_or_factory if isinstance(agent_or_factory, Agent) else agent_or_factory()
        if not isinstance(agent, Agent):
            raise ConfigError(f"agent factory {agent_or_factory!r} did not return an Agent")
        key = (agent.name, agent.version)
        if key in self._agents:
            raise ConfigError(f"agent {agent.name!r} version {agent.version!r} is registered twice")
        self._agents[key] = agent
        return agent

    def get(self, name: str, version: str) -> Agent:
        """The agent with exactly this name and version, or AgentNotRegisteredError."""
        agent = self._agents.get((name, version))
        if agent is None:
            raise AgentNotRegisteredError(
                f"agent {name!r} version {version!r} is not registered "
                f"(registered: {self.describe()})"
            )
        return agent

    def latest(self, name: str) -> Agent:
        """The most recently registered version of `name` (for starting new runs)."""
        for (agent_name, _), agent in reversed(self._agents.items()):
            if agent_name == name:
                return agent
        raise AgentNotRegisteredError(
            f"no agent named {name!r} is registered (registered: {self.describe()})"
        )

    def default(self) -> Agent:
        """The first registered agent."""
        for agent in self._agents.values():
            return agent
        raise AgentNotRegisteredError("no agent is registered")

    def describe(self) -> str:
        if not self._agents:
            return "none"
        return ", ".join(f"{name} v{version}" for name, version in self._agents)

    def __iter__(self) -> Iterator[Agent]:
        return iter(list(self._agents.values()))

    def __len__(self) -> int:
        return len(self._agents)
