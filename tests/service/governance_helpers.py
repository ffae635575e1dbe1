"""Shared pieces of the governance tests: a policy, a fake group directory (the Slack
edge), a clock the test moves, and a gated agent for races at execution time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.policy.loading import parse_policy
from bot.policy.rules import Policy
from bot.runtime import Agent, AgentRegistry, ScriptedModel, tool
from tests.service.service_harness import Harness

ALICE, BOB, CAROL, MALLORY, ADMIN = "UALICE", "UBOB", "UCAROL", "UMALLORY", "UADMIN"
RELEASE = "SRELEASE"

POLICY = f"""
admins = ["{ADMIN}"]

[defaults]
expires_after = "2h"
remind_before = "1h"

[tools.deploy_release]
approvers = ["{RELEASE}"]
required_approvals = 2

[tools.restart_service]
approvers = ["{RELEASE}"]
"""


def policy(text: str = POLICY) -> Policy:
    return parse_policy(text, source="test-policy.toml")


async def governed(open_harness: Callable[..., Any], **options: Any) -> Harness:
    """A harness under the test policy and an empty group directory, unless given."""
    options.setdefault("policy", policy())
    options.setdefault("groups", FakeGroups())
    harness: Harness = await open_harness(**options)
    return harness


async def audit_of(harness: Harness, run_id: str, kind: str) -> list[dict[str, Any]]:
    """The run's audit events of one kind, each as its detail plus the actor."""
    trail = await harness.store.audit_events(run_id=run_id)
    return [{"actor": e.actor, **e.detail} for e in trail if e.kind == kind]


class FakeGroups:
    """The Slack user-group directory, as the service sees it (a fake at the edge)."""

    def __init__(self, members: dict[str, set[str]] | None = None) -> None:
        self.groups = members if members is not None else {RELEASE: {ALICE, BOB, CAROL}}

    async def members(self, group_id: str) -> frozenset[str]:
        return frozenset(self.groups.get(group_id, set()))


@dataclass
class Clock:
    now: datetime = field(default_factory=lambda: datetime(2026, 3, 2, 9, 0, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Gate:
    """A tool that waits until the test opens it, and a record of what ran."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    ran: list[str] = field(default_factory=list)


def gated_registry(gate: Gate, effects: Path) -> AgentRegistry:
    """Agent `ops` whose model asks for `hold` then `launch` in one turn (both need
    approval); `hold` blocks until the gate opens."""

    @tool(needs_approval=True)
    async def hold() -> str:
        gate.entered.set()
        await gate.release.wait()
        gate.ran.append("hold")
        return "held"

    @tool(needs_approval=True)
    async def launch(target: str) -> str:
        gate.ran.append(f"launch {target}")
        with effects.open("a") as out:
            out.write('{"tool": "launch"}\n')
        return f"launched {target}"

    script: list[Any] = [[("hold", {}), ("launch", {"target": "moon"})], "done"]
    agent = Agent(name="ops", instructions="-", tools=[hold, launch], model=ScriptedModel(script))
    return AgentRegistry([agent])
