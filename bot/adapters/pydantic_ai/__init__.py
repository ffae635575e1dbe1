"""Pydantic AI agents, run by the bot (from a checkout:
`pip install -e '.[pydantic-ai]'`).

Importing this package does not import Pydantic AI; its names below do, on first use
(`PydanticAIEngine` and the rest). `BUILTIN` declares `ops-pydantic` for the built-in
registry (bot.adapters.lazy). See docs/pydantic-ai.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bot.adapters.pydantic_ai.builtin import BUILTIN, OPS_PYDANTIC_NAME, OPS_PYDANTIC_VERSION

if TYPE_CHECKING:
    from bot.adapters.pydantic_ai.engine import (
        ENGINE_NAME,
        PYDANTIC_AI_VERSION,
        STATE_FORMAT,
        PydanticAIEngine,
    )
    from bot.adapters.pydantic_ai.ops import build_ops_pydantic_agent, offline_ops_model

_ENGINE = "bot.adapters.pydantic_ai.engine"
_OPS = "bot.adapters.pydantic_ai.ops"
_LAZY = {
    "ENGINE_NAME": _ENGINE,
    "PYDANTIC_AI_VERSION": _ENGINE,
    "STATE_FORMAT": _ENGINE,
    "PydanticAIEngine": _ENGINE,
    "build_ops_pydantic_agent": _OPS,
    "offline_ops_model": _OPS,
}


def __getattr__(name: str) -> Any:
    """The Pydantic AI-backed names, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "BUILTIN",
    "ENGINE_NAME",
    "OPS_PYDANTIC_NAME",
    "OPS_PYDANTIC_VERSION",
    "PYDANTIC_AI_VERSION",
    "STATE_FORMAT",
    "PydanticAIEngine",
    "build_ops_pydantic_agent",
    "offline_ops_model",
]
