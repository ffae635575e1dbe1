"""Agents of the OpenAI Agents SDK, run by the bot (from a checkout:
`pip install -e '.[openai-agents]'`).

Importing this package imports the SDK (`agents`); the rest of the bot imports it only
when the SDK is installed (`sdk_installed()`). See docs/openai-agents.md.
"""

from bot.adapters.openai_agents.engine import (
    ENGINE_NAME,
    SDK_SCHEMA_VERSION,
    SDK_VERSION,
    OpenAIAgentsEngine,
    SdkTool,
)
from bot.adapters.openai_agents.ops import (
    OPS_OPENAI_NAME,
    OPS_OPENAI_VERSION,
    OfflineOpsScript,
    build_ops_openai_agent,
)
from bot.adapters.openai_agents.tools import CallUnsettled

__all__ = [
    "ENGINE_NAME",
    "OPS_OPENAI_NAME",
    "OPS_OPENAI_VERSION",
    "SDK_SCHEMA_VERSION",
    "SDK_VERSION",
    "CallUnsettled",
    "OfflineOpsScript",
    "OpenAIAgentsEngine",
    "SdkTool",
    "build_ops_openai_agent",
]
