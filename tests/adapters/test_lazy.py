"""ops-openai is registered without importing the SDK and built on first use; a factory
that builds something else than it was registered as is refused by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.adapters.lazy import LazyEngine
from bot.errors import ConfigError

OPS_OPENAI = "bot.adapters.openai_agents.ops:build_ops_openai_agent"


def test_the_builtin_registry_does_not_import_the_sdk() -> None:
    code = (
        "import sys; from bot.agents import builtin_registry; r = builtin_registry(); "
        "assert 'ops-openai' in r.describe(); print('agents' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"


def test_a_factory_building_another_agent_is_refused() -> None:
    lazy = LazyEngine(
        factory=OPS_OPENAI,
        name="ops-openai",
        version="2",
        tools=["deploy_release", "get_status", "restart_service", "set_config"],
        amendable=False,
    )
    assert lazy.tool_names() == ["deploy_release", "get_status", "restart_service", "set_config"]
    with pytest.raises(ConfigError, match=r"version '1'.*not the \('ops-openai', '2'"):
        lazy.engine()
