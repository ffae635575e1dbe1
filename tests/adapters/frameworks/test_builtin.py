"""The built-in agents of the adapters are found by folder and registered without
importing their frameworks; each is built, off the event loop, when it first runs."""

from __future__ import annotations

import subprocess
import sys

from bot.adapters.lazy import builtin_agents
from tests.adapters.frameworks.support import installed


def test_every_adapter_declares_its_ops_agent() -> None:
    found = {agent.name: agent.requires for agent in builtin_agents()}
    assert found == {
        "ops-langgraph": "langgraph",
        "ops-openai": "agents",
        "ops-pydantic": "pydantic_ai",
    }
    assert {agent.name for agent in builtin_agents() if agent.amendable} == {
        "ops-langgraph",
        "ops-pydantic",
    }


def test_the_builtin_registry_imports_no_framework() -> None:
    code = (
        "import sys; from bot.agents import builtin_registry; r = builtin_registry(); "
        "print(r.describe()); "
        "print([m for m in ('agents', 'langgraph', 'langchain_core', 'pydantic_ai') "
        "if m in sys.modules])"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    registered, imported = shown.stdout.strip().splitlines()
    assert imported == "[]"
    for name, module in (("ops-langgraph", "langgraph"), ("ops-pydantic", "pydantic_ai")):
        assert (name in registered) == installed(module)
