"""`ops-langgraph`, the demo ops agent on LangGraph, as the bot registers it before
LangGraph is imported (bot.adapters.lazy); `ops.py` builds it."""

from bot.adapters.lazy import BuiltinAgent
from bot.demo.ops_tools import OPS_TOOLS

OPS_LANGGRAPH_NAME = "ops-langgraph"
OPS_LANGGRAPH_VERSION = "1"

BUILTIN = BuiltinAgent(
    requires="langgraph",
    framework="LangGraph",
    extra="langgraph",
    factory="bot.adapters.langgraph.ops:build_ops_langgraph_agent",
    name=OPS_LANGGRAPH_NAME,
    version=OPS_LANGGRAPH_VERSION,
    tools=tuple(tool.name for tool in OPS_TOOLS),
    amendable=True,
)
