"""The ops agent ("ops", version "1"): the embedded default agent of approvals-bot."""

from __future__ import annotations

import os
from collections.abc import Mapping

from bot.demo.offline_model import OfflineOpsModel
from bot.demo.tools import OPS_TOOLS
from bot.errors import ConfigError
from bot.runtime import Agent, AgentRegistry, Model

OPS_AGENT_NAME = "ops"
OPS_AGENT_VERSION = "1"
OPS_INSTRUCTIONS = (
    "You are an operations assistant. Use the tools to deploy releases, restart "
    "services, set configuration and report status. Deploys, restarts and configuration "
    "changes need a human's approval; if one is rejected, say so and pass on the message. "
    "Finish with a short report of each tool result."
)


def build_ops_agent(model: Model | None = None) -> Agent:
    """The ops agent with `model` (default: the deterministic offline model)."""
    return Agent(
        name=OPS_AGENT_NAME,
        version=OPS_AGENT_VERSION,
        instructions=OPS_INSTRUCTIONS,
        tools=OPS_TOOLS,
        model=model if model is not None else OfflineOpsModel(),
    )


def default_registry(model: Model | None = None) -> AgentRegistry:
    """A registry holding the ops agent (the default agent)."""
    return AgentRegistry([build_ops_agent(model)])


def model_from_env(environ: Mapping[str, str] | None = None) -> Model:
    """The ops agent's model as configured: APPROVALS_MODEL=offline (default) or openai
    (then OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL are required). The caller
    closes it with `await model.aclose()` (both kinds have it)."""
    env = os.environ if environ is None else environ
    choice = env.get("APPROVALS_MODEL", "").strip().lower() or "offline"
    if choice == "offline":
        return OfflineOpsModel()
    if choice == "openai":
        # imported here: it brings aiohttp, which every other command would pay for at
        # start-up (bot.demo is imported by the CLI's demo and serve commands)
        from bot.runtime.openai_model import OpenAIChatModel, openai_config_from_env

        return OpenAIChatModel.from_config(openai_config_from_env(env))
    raise ConfigError(f"APPROVALS_MODEL must be 'offline' or 'openai', not {choice!r}")


async def close_model(model: Model) -> None:
    """Close a model from `model_from_env` (the OpenAI one owns an HTTP session; any
    model with an `aclose` is closed, one without needs nothing)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()
