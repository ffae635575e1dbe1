"""LangGraph graphs, run by the bot (from a checkout:
`pip install -e '.[langgraph]'`).

Importing this package does not import LangGraph; its names below do, on first use
(`LangGraphEngine` and the rest). `BUILTIN` declares `ops-langgraph` for the built-in
registry (bot.adapters.lazy). See docs/langgraph.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bot.adapters.langgraph.builtin import BUILTIN, OPS_LANGGRAPH_NAME, OPS_LANGGRAPH_VERSION

if TYPE_CHECKING:
    from bot.adapters.langgraph.engine import (
        ENGINE_NAME,
        LANGGRAPH_VERSION,
        STATE_FORMAT,
        LangGraphEngine,
        last_message_text,
        messages_input,
    )
    from bot.adapters.langgraph.ops import (
        OfflineOpsChatModel,
        build_ops_graph,
        build_ops_langgraph_agent,
    )

_ENGINE = "bot.adapters.langgraph.engine"
_OPS = "bot.adapters.langgraph.ops"
_LAZY = {
    "ENGINE_NAME": _ENGINE,
    "LANGGRAPH_VERSION": _ENGINE,
    "STATE_FORMAT": _ENGINE,
    "LangGraphEngine": _ENGINE,
    "last_message_text": _ENGINE,
    "messages_input": _ENGINE,
    "OfflineOpsChatModel": _OPS,
    "build_ops_graph": _OPS,
    "build_ops_langgraph_agent": _OPS,
}


def __getattr__(name: str) -> Any:
    """The LangGraph-backed names, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BUILTIN",
    "ENGINE_NAME",
    "LANGGRAPH_VERSION",
    "OPS_LANGGRAPH_NAME",
    "OPS_LANGGRAPH_VERSION",
    "STATE_FORMAT",
    "LangGraphEngine",
    "OfflineOpsChatModel",
    "build_ops_graph",
    "build_ops_langgraph_agent",
    "last_message_text",
    "messages_input",
]
