"""APPROVALS_AGENTS: integrators' agents (`package.module:attribute`), merged over the
default registry (the demo `ops` agent)."""

from __future__ import annotations

import importlib

from bot.errors import ConfigError
from bot.runtime import AgentRegistry

AGENTS_ENV = "APPROVALS_AGENTS"


def load_agent_registry(spec: str | None, *, default: AgentRegistry) -> AgentRegistry:
    """The default registry, plus (and overridden by) the registry `spec` names: an
    AgentRegistry or a zero-argument callable returning one."""
    if spec is None:
        return default
    extra = _resolve(spec)
    extra_keys = {(agent.name, agent.version) for agent in extra}
    merged = AgentRegistry(
        agent for agent in default if (agent.name, agent.version) not in extra_keys
    )
    for agent in extra:
        merged.register(agent)
    return merged


def _resolve(spec: str) -> AgentRegistry:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"{AGENTS_ENV}: cannot import {module_name!r}: {error}") from error
    target = getattr(module, attribute, None)
    if target is None:
        raise ConfigError(f"{AGENTS_ENV}: module {module_name!r} has no attribute {attribute!r}")
    if callable(target) and not isinstance(target, AgentRegistry):
        target = target()
    if not isinstance(target, AgentRegistry):
        raise ConfigError(
            f"{AGENTS_ENV}: {spec!r} is neither an AgentRegistry nor a callable returning one"
        )
    return target
