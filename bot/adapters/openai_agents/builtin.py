"""`ops-openai`, the demo ops agent on the OpenAI Agents SDK, as the bot registers it
before the SDK is imported (bot.adapters.lazy); `ops.py` builds it."""

from bot.adapters.lazy import BuiltinAgent
from bot.demo.ops_tools import OPS_TOOLS

OPS_OPENAI_NAME = "ops-openai"
OPS_OPENAI_VERSION = "1"

BUILTIN = BuiltinAgent(
    requires="agents",
    framework="the OpenAI Agents SDK",
    extra="openai-agents",
    factory="bot.adapters.openai_agents.ops:build_ops_openai_agent",
    name=OPS_OPENAI_NAME,
    version=OPS_OPENAI_VERSION,
    tools=tuple(tool.name for tool in OPS_TOOLS),
    amendable=False,
)
