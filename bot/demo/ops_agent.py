"""The ops agent ("ops", version "1"): the embedded default agent of approvals-bot."""

from __future__ import annotations

from bot.demo.offline_model import OfflineOpsModel
from bot.demo.ops_tools import OPS_TOOLS
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
