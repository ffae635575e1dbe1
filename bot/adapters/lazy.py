"""An engine registered by name before its framework is imported, and the built-in
agents of the adapters.

Importing an agent framework takes up to seconds of CPU (the OpenAI Agents SDK brings
the OpenAI client and its types; LangGraph and Pydantic AI bring pydantic models): a
deployment that has an extra but runs none of its agents must not pay that at
start-up, in every CLI command, nor block the event loop with it. `LazyEngine` tells the
registry, the policy and the cards what they need (name, version, tool names) from what
it was given, and builds the real engine on first use: in a worker thread when a run
resumes (`run`), or starts (the service makes a new state in a worker thread). Asked
about approve with changes (it is an `ArgumentEditor` for the one it builds), it answers
as the built engine does: by then a run of it has paused, so it is built.

Each adapter package (a folder under bot/adapters/) may declare a built-in agent, the
demo ops agent rebuilt on its framework, as `BUILTIN = BuiltinAgent(...)` in its
`__init__.py`, which must not import the framework. `builtin_agents()` finds them all;
bot.agents registers each one whose framework is installed and notes the others as
unavailable, naming the extra to install: adding a framework adds a folder, and nothing
else in the bot names it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import pkgutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import ConfigError, InputError
from bot.runtime import (
    AgentEngine,
    AgentRun,
    ArgumentEditor,
    EngineResult,
    Journal,
    PendingCall,
    ToolView,
)


@dataclass(frozen=True, kw_only=True)
class NamedTool:
    name: str
    review_fields: tuple[str, ...] | None = None


class LazyEngine:
    """`factory` ("package.module:function") returns the engine named `name`, `version`,
    with the tools `tools`; ConfigError on first use when it does not.
    `understands_ops_tasks`: the demo ops agent's offline brain runs it (the terminal
    demo refuses a task that brain does not understand before a run is stored)."""

    def __init__(
        self,
        *,
        factory: str,
        name: str,
        version: str,
        tools: Sequence[str],
        amendable: bool,
        understands_ops_tasks: bool = False,
    ) -> None:
        self.understands_ops_tasks = understands_ops_tasks
        self._factory = factory
        self._name = name
        self._version = version
        self._tools = {tool: NamedTool(name=tool) for tool in tools}
        self._amendable = amendable
        self._built: AgentEngine | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> str:
        return self._version

    @property
    def amendable(self) -> bool:
        return self._amendable

    def tool_names(self) -> list[str]:
        return list(self._tools)

    def tool_named(self, name: str) -> ToolView | None:
        if self._built is not None:
            return self._built.tool_named(name)
        return self._tools.get(name)

    def new_state(self, task: str, *, run_id: str, context: Any = None) -> AgentRun:
        return self.engine().new_state(task, run_id=run_id, context=context)

    def check_state(self, state: AgentRun) -> None:
        """The built engine's check; before it is built, nothing (building imports the
        framework, too slow for the event loop): `run` builds it and it checks there."""
        if self._built is not None:
            self._built.check_state(state)

    async def run(
        self,
        state: AgentRun,
        *,
        journal: Journal,
        dependencies: Mapping[str, Any],
        max_tool_calls_per_turn: int | None = None,
    ) -> EngineResult:
        engine = await asyncio.to_thread(self.engine)  # the import, off the event loop
        return await engine.run(
            state,
            journal=journal,
            dependencies=dependencies,
            max_tool_calls_per_turn=max_tool_calls_per_turn,
        )

    # -- approve with changes: the built engine's, when it edits (bot.runtime.ArgumentEditor)

    def can_amend(self, state: AgentRun, call: PendingCall) -> bool:
        engine = self.engine()
        return isinstance(engine, ArgumentEditor) and engine.can_amend(state, call)

    def check_arguments(
        self, state: AgentRun, call: PendingCall, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._editor().check_arguments(state, call, arguments)

    def amended(self, state: AgentRun, tool_call_id: str, arguments: Mapping[str, Any]) -> AgentRun:
        return self._editor().amended(state, tool_call_id, arguments)

    def _editor(self) -> ArgumentEditor:
        engine = self.engine()
        if not isinstance(engine, ArgumentEditor):
            raise InputError(f"agent {self._name!r} takes no changed arguments")
        return engine

    async def load(self) -> AgentEngine:
        """Build the engine now, in a worker thread (to warm it up before first use)."""
        return await asyncio.to_thread(self.engine)

    def engine(self) -> AgentEngine:
        """The real engine, built once (imports its framework)."""
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def _build(self) -> AgentEngine:
        module_name, _, attribute = self._factory.partition(":")
        built = getattr(importlib.import_module(module_name), attribute)()
        if not isinstance(built, AgentEngine):
            raise ConfigError(f"{self._factory} did not return an agent engine")
        found = (built.name, built.version, sorted(built.tool_names()))
        promised = (self._name, self._version, sorted(self._tools))
        if found != promised:
            raise ConfigError(
                f"{self._factory} built agent {found[0]!r} version {found[1]!r} with tools "
                f"{found[2]}, not the {promised} it was registered as"
            )
        return built


@dataclass(frozen=True, kw_only=True)
class BuiltinAgent:
    """A built-in agent of an adapter: registered (lazily) when the module `requires`
    (the framework's import name) can be found; `framework` names it for people and
    `extra` is the approvals-bot extra that installs it."""

    requires: str
    framework: str
    extra: str
    factory: str
    name: str
    version: str
    tools: tuple[str, ...]
    amendable: bool
    understands_ops_tasks: bool = True

    def installed(self) -> bool:
        return importlib.util.find_spec(self.requires) is not None

    def install_hint(self) -> str:
        return f"pip install -e '.[{self.extra}]' in your approvals-bot checkout"

    def not_installed(self) -> str:
        """What someone asking for this agent without its framework is told."""
        return (
            f"the agent {self.name!r} needs {self.framework}, which is not installed: "
            f"{self.install_hint()}"
        )

    def engine(self) -> LazyEngine:
        return LazyEngine(
            factory=self.factory,
            name=self.name,
            version=self.version,
            tools=self.tools,
            amendable=self.amendable,
            understands_ops_tasks=self.understands_ops_tasks,
        )


def builtin_agents() -> list[BuiltinAgent]:
    """The built-in agent of every adapter package that declares one (module doc),
    installed or not, in the packages' name order."""
    import bot.adapters

    found = []
    for module in sorted(pkgutil.iter_modules(bot.adapters.__path__), key=lambda m: m.name):
        if not module.ispkg:
            continue
        package = importlib.import_module(f"bot.adapters.{module.name}")
        builtin = getattr(package, "BUILTIN", None)
        if isinstance(builtin, BuiltinAgent):
            found.append(builtin)
    return found


def builtin_agent_needing(module: str | None) -> BuiltinAgent | None:
    """A built-in agent whose framework is the module `module` (or its package): what
    an ImportError's `name` points at when an extra is missing."""
    top = (module or "").partition(".")[0]
    return next((agent for agent in builtin_agents() if agent.requires == top), None)
