"""`ops-pydantic`, the demo ops agent on Pydantic AI, as the bot registers it before
Pydantic AI is imported (bot.adapters.lazy); `ops.py` builds it."""

from bot.adapters.lazy import BuiltinAgent
from bot.demo.ops_tools import OPS_TOOLS

OPS_PYDANTIC_NAME = "ops-pydantic"
OPS_PYDANTIC_VERSION = "1"

BUILTIN = BuiltinAgent(
    requires="pydantic_ai",
    framework="Pydantic AI",
    extra="pydantic-ai",
    factory="bot.adapters.pydantic_ai.ops:build_ops_pydantic_agent",
    name=OPS_PYDANTIC_NAME,
    version=OPS_PYDANTIC_VERSION,
    tools=tuple(tool.name for tool in OPS_TOOLS),
    amendable=True,
)
