"""Helpers for run-core tests: a small ops toolbox that records every real effect.

A uniquely named module (not conftest) so test modules can import it unambiguously."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.runtime import Agent, ScriptedModel, Tool, current_tool_call, tool
from bot.runtime.model import ScriptStep


@dataclass(kw_only=True)
class Effect:
    tool: str
    arguments: dict[str, Any]
    execution_key: str
    attempt: int
    dependencies: dict[str, Any]


@dataclass(kw_only=True)
class Ops:
    """Tools like the demo agent's, each appending an Effect when it really runs."""

    effects: list[Effect] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)

    def __post_init__(self) -> None:
        def record(name: str, **arguments: Any) -> None:
            call = current_tool_call()
            self.effects.append(
                Effect(
                    tool=name,
                    arguments=arguments,
                    execution_key=call.execution_key,
                    attempt=call.attempt,
                    dependencies=dict(call.dependencies),
                )
            )

        @tool(needs_approval=True, replay_policy="idempotent")
        async def deploy_release(service: str, version: str) -> str:
            """Deploy a release of a service."""
            record("deploy_release", service=service, version=version)
            return f"deployed {service} {version}"

        @tool(needs_approval=True)
        def restart_service(service: str) -> str:
            """Restart a service."""
            record("restart_service", service=service)
            return f"restarted {service}"

        @tool(needs_approval=True, replay_policy="safe")
        async def set_config(service: str, key: str, value: str) -> str:
            """Set one configuration value."""
            record("set_config", service=service, key=key, value=value)
            return f"set {key} on {service}"

        @tool
        async def get_status(service: str) -> dict[str, str]:
            """Report a service's health."""
            record("get_status", service=service)
            return {"service": service, "status": "healthy"}

        self.tools = [deploy_release, restart_service, set_config, get_status]

    def agent(self, script: Sequence[ScriptStep], *, version: str = "1", **options: Any) -> Agent:
        return Agent(
            name="ops",
            version=version,
            instructions="You operate services carefully.",
            tools=self.tools,
            model=ScriptedModel(script),
            **options,
        )

    def effects_of(self, name: str) -> list[Effect]:
        return [effect for effect in self.effects if effect.tool == name]


def results_by_call(history: Sequence[Any]) -> dict[str, tuple[str, bool]]:
    """Each tool call's (content, is_error) result, by tool call id."""
    return {
        item["tool_call_id"]: (item["content"], item["is_error"])
        for item in history
        if item["type"] == "tool_result"
    }
