"""Which agents this deployment runs: the model they use and the registry they come from.

Configuration read once at start-up by `serve`, `socket` and `demo`:

- APPROVALS_MODEL chooses the model of the default (ops) agent: `offline` (the default,
  deterministic, no network) or `openai` (any OpenAI-compatible chat-completions server,
  with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL). `close_model` closes it.
- APPROVALS_AGENTS (`package.module:attribute`) names integrators' agents: an
  AgentRegistry, or a zero-argument callable returning one, merged over (and overriding)
  the default registry.

The built-in registry holds the ops agent and, for each agent framework whose extra is
installed, the ops agent rebuilt on it (each adapter under bot/adapters/ declares its
own; bot.adapters.lazy finds them and registers them without importing the framework).

Every problem is a ConfigError naming the variable. bot.demo holds the demo agent
itself; this module only chooses.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

from bot.adapters.lazy import builtin_agent_needing, builtin_agents
from bot.demo.offline_model import OfflineOpsModel
from bot.demo.ops_agent import default_registry
from bot.errors import ConfigError
from bot.metrics import Metrics
from bot.runtime import AgentEngine, AgentRegistry, Model

AGENTS_ENV = "APPROVALS_AGENTS"
MODEL_ENV = "APPROVALS_MODEL"


def model_from_env(
    environ: Mapping[str, str] | None = None, *, metrics: Metrics | None = None
) -> Model:
    """The ops agent's model as configured: APPROVALS_MODEL=offline (default) or openai
    (then OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL are required; its retries
    are counted in `metrics`). The caller closes it with `close_model`."""
    env = os.environ if environ is None else environ
    choice = env.get(MODEL_ENV, "").strip().lower() or "offline"
    if choice == "offline":
        return OfflineOpsModel()
    if choice == "openai":
        # imported here: it brings aiohttp, which every other command would pay for at
        # start-up (this module is imported by the CLI's demo and serve commands)
        from bot.runtime.openai_model import OpenAIChatModel, openai_config_from_env

        def count_retry(reason: str) -> None:
            if metrics is not None:
                metrics.model_retries.labels(reason=reason).inc()

        return OpenAIChatModel.from_config(openai_config_from_env(env), on_retry=count_retry)
    raise ConfigError(f"{MODEL_ENV} must be 'offline' or 'openai', not {choice!r}")


async def close_model(model: Model) -> None:
    """Close a model from `model_from_env` (the OpenAI one owns an HTTP session; any
    model with an `aclose` is closed, one without needs nothing)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


def agent_to_run(registry: AgentRegistry, name: str | None) -> AgentEngine:
    """The latest version of the agent `name` (None: the registry's default). Asking for
    a built-in agent whose framework is missing says which extra brings it (the
    built-in registry notes them: `builtin_registry`)."""
    return registry.default() if name is None else registry.latest(name)


def builtin_registry(model: Model | None = None) -> AgentRegistry:
    """The agents every deployment has: `ops` with `model` (default: offline) and, for
    each installed agent framework, its built-in twin (always offline: no credentials
    needed; the framework is imported when the agent first runs)."""
    registry = default_registry(model)
    for builtin in builtin_agents():
        if builtin.installed():
            registry.register(builtin.engine())
        else:  # asked for by name (/agent @ops-langgraph, demo --agent), it says why not
            registry.note_unavailable(builtin.name, builtin.not_installed())
    return registry


def tool_names(registry: AgentRegistry) -> list[str]:
    """Every tool of every agent in `registry` (what a policy's tool tables may name)."""
    return sorted({name for agent in registry for name in agent.tool_names()})


def load_agent_registry(spec: str | None, *, default: AgentRegistry) -> AgentRegistry:
    """The default registry, plus (and overridden by) the registry `spec` names: an
    AgentRegistry or a zero-argument callable returning one."""
    if spec is None:
        return default
    extra = _resolve(spec)
    extra_keys = {(agent.name, agent.version) for agent in extra}
    merged = AgentRegistry(
        (agent for agent in default if (agent.name, agent.version) not in extra_keys),
        unavailable=default.unavailable,
    )
    for agent in extra:
        merged.register(agent)
    return merged


def _resolve(spec: str) -> AgentRegistry:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        needing = builtin_agent_needing(error.name)
        hint = f" ({needing.framework}: {needing.install_hint()})" if needing else ""
        raise ConfigError(f"{AGENTS_ENV}: cannot import {module_name!r}: {error}{hint}") from error
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
