"""APPROVALS_AGENTS: integrators' registries merged over the default one."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from bot.agents import load_agent_registry
from bot.errors import AgentNotRegisteredError, ConfigError
from bot.runtime import Agent, AgentRegistry, ScriptedModel
from tests.cli.operator_support import Home


def _agent(name: str, version: str = "1") -> Agent:
    return Agent(
        name=name, instructions=name, tools=[], model=ScriptedModel(["ok"]), version=version
    )


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    module = types.ModuleType("extra_agents_for_test")
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        del sys.modules[module.__name__]


def test_no_spec_is_the_default_registry() -> None:
    default = AgentRegistry([_agent("ops")])
    assert load_agent_registry(None, default=default) is default


def test_extra_agents_are_added_and_override_the_same_name_and_version(
    module: types.ModuleType,
) -> None:
    replacement = _agent("ops")
    module.registry = AgentRegistry([replacement, _agent("billing")])  # type: ignore[attr-defined]
    merged = load_agent_registry(
        "extra_agents_for_test:registry", default=AgentRegistry([_agent("ops"), _agent("ops", "0")])
    )
    assert merged.get("ops", "1") is replacement
    assert {(agent.name, agent.version) for agent in merged} == {
        ("ops", "0"),
        ("ops", "1"),
        ("billing", "1"),
    }


def test_a_callable_returning_a_registry_is_called(module: types.ModuleType) -> None:
    module.build = lambda: AgentRegistry([_agent("billing")])  # type: ignore[attr-defined]
    merged = load_agent_registry(
        "extra_agents_for_test:build", default=AgentRegistry([_agent("ops")])
    )
    assert merged.latest("billing").name == "billing"
    assert merged.default().name == "ops"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("no_such_module_for_sure:x", "cannot import 'no_such_module_for_sure'"),
        ("extra_agents_for_test:missing", "has no attribute 'missing'"),
        ("extra_agents_for_test:number", "neither an AgentRegistry"),
    ],
)
def test_bad_specs_name_the_variable(module: types.ModuleType, spec: str, problem: str) -> None:
    module.number = 42  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=problem) as raised:
        load_agent_registry(spec, default=AgentRegistry([_agent("ops")]))
    assert str(raised.value).startswith("APPROVALS_AGENTS")


def test_ops_openai_without_the_sdk_names_the_extra_to_install(home: Home) -> None:
    home.monkeypatch.setitem(sys.modules, "agents", None)  # as if the extra were absent
    code, _, err = home.cli("demo", "--agent", "ops-openai", "deploy payments 1.2.3")
    assert code == 2
    assert err == (
        "approvals-bot: error: the agent 'ops-openai' needs the OpenAI Agents SDK, which is "
        "not installed: pip install -e '.[openai-agents]' in your approvals-bot checkout\n"
    )
    assert not home.db.exists()  # refused before anything was stored


def test_an_agents_module_that_needs_the_sdk_names_the_extra(home: Home) -> None:
    (home.path / "sdk_agents_for_test.py").write_text("import agents\nregistry = None\n")
    home.monkeypatch.syspath_prepend(str(home.path))
    home.monkeypatch.setitem(sys.modules, "agents", None)
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[openai-agents\]'"):
        load_agent_registry("sdk_agents_for_test:registry", default=AgentRegistry([_agent("ops")]))


def test_an_agent_noted_unavailable_says_why_in_a_merged_registry_too(
    module: types.ModuleType,
) -> None:
    default = AgentRegistry([_agent("ops")])
    default.note_unavailable("ops-graph", "the agent 'ops-graph' needs LangGraph: install it")
    module.registry = AgentRegistry([_agent("billing")])  # type: ignore[attr-defined]
    merged = load_agent_registry("extra_agents_for_test:registry", default=default)
    with pytest.raises(AgentNotRegisteredError) as raised:
        merged.latest("ops-graph")
    assert str(raised.value) == "the agent 'ops-graph' needs LangGraph: install it"
    with pytest.raises(AgentNotRegisteredError, match="no agent named 'other'"):
        merged.latest("other")
    merged.register(_agent("ops-graph"))  # an agent of that name, registered: it runs
    assert merged.latest("ops-graph").name == "ops-graph"
