"""Agents of the OpenAI Agents SDK, run by the bot (from a checkout:
`pip install -e '.[openai-agents]'`).

Importing this package does not import the SDK; its names below do, on first use
(`OpenAIAgentsEngine` and the rest). `BUILTIN` declares `ops-openai` for the built-in
registry (bot.adapters.lazy). See docs/openai-agents.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bot.adapters.openai_agents.builtin import BUILTIN, OPS_OPENAI_NAME, OPS_OPENAI_VERSION

if TYPE_CHECKING:
    from bot.adapters.calls import CallUnsettled
    from bot.adapters.openai_agents.engine import (
        ENGINE_NAME,
        SDK_SCHEMA_VERSION,
        SDK_VERSION,
        OpenAIAgentsEngine,
        SdkTool,
    )
    from bot.adapters.openai_agents.ops import OfflineOpsScript, build_ops_openai_agent

_LAZY = {
    "ENGINE_NAME": "bot.adapters.openai_agents.engine",
    "SDK_SCHEMA_VERSION": "bot.adapters.openai_agents.engine",
    "SDK_VERSION": "bot.adapters.openai_agents.engine",
    "OpenAIAgentsEngine": "bot.adapters.openai_agents.engine",
    "SdkTool": "bot.adapters.openai_agents.engine",
    "OfflineOpsScript": "bot.adapters.openai_agents.ops",
    "build_ops_openai_agent": "bot.adapters.openai_agents.ops",
    "CallUnsettled": "bot.adapters.calls",
}


def __getattr__(name: str) -> Any:
    """The SDK-backed names, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BUILTIN",
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
