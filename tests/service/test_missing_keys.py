"""A vote sealed with a key this process's ring lacks (an operator's command whose key
file already had the next key, while the bot still runs on the old ring): the bot that
resumes the call cannot judge that seal. That is a missing key, not tampering: the run
waits paused with its decisions kept and readiness names the key; a process holding
the key runs the call, once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.policy.rules import Policy, ToolRule
from bot.runtime import Agent, AgentRegistry, ScriptedModel, tool
from bot.service import ApprovalService, TaskOwner
from store import open_store
from store.api import Store
from store.crypto import DataKey, KeyRing
from store.keys import generate_key
from tests.service.service_harness import RecordingNotifier
from tests.store.postgres_db import fresh_postgres_database

REQUESTER = "U-req"
POLICY = Policy(defaults=ToolRule(required_approvals=2, require_reason=False))


@dataclass
class Downstream:
    deployed: list[str] = field(default_factory=list)


def registry(downstream: Downstream) -> AgentRegistry:
    @tool(needs_approval=True, replay_policy="idempotent")
    async def deploy(service: str) -> str:
        """Deploy a service."""
        downstream.deployed.append(service)
        return f"deployed {service}"

    model = ScriptedModel([[("deploy", {"service": "api"})], "Done."])
    return AgentRegistry([Agent(name="ops", instructions="ops", tools=[deploy], model=model)])


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "approvals.db")
        return
    with fresh_postgres_database() as url:
        yield url


@dataclass
class Process:
    store: Store
    service: ApprovalService
    notifier: RecordingNotifier


@pytest.fixture
async def processes(database_url: str) -> AsyncIterator[Any]:
    downstream, opened = Downstream(), []

    async def open_process(name: str, keys: list[DataKey], surface: Any = "slack") -> Process:
        store = await open_store(database_url, keyring=KeyRing(keys), environ={})
        notifier = RecordingNotifier()
        service = ApprovalService(
            store=store, registry=registry(downstream), notifier=notifier, dependencies={},
            tasks=TaskOwner(), worker_id=name, policy=POLICY, surface=surface,
        )  # fmt: skip
        opened.append(Process(store=store, service=service, notifier=notifier))
        return opened[-1]

    open_process.downstream = downstream  # type: ignore[attr-defined]
    yield open_process
    for process in reversed(opened):
        await process.service.aclose(timeout=5)
        await process.store.close()


async def test_a_vote_sealed_with_a_key_the_bot_lacks_makes_the_run_wait_not_fail(
    processes: Any,
) -> None:
    old, new = generate_key("k-old"), generate_key("k-new")
    bot = await processes("bot", [old])
    operator = await processes("cli:ops:1", [new, old], surface="cli")
    downstream: Downstream = processes.downstream
    run = await bot.service.start_run(
        agent_name="ops", task="deploy api", requester=REQUESTER, channel="C1"
    )
    [approval] = await bot.store.list_approvals(run_id=run.run_id, status="pending")

    await operator.service.decide(approval.approval_id, approve=True, decider="U-a", reason="")
    await bot.service.decide(approval.approval_id, approve=True, decider="U-b", reason="")
    await bot.service.drain()

    waiting = await bot.store.get_run(run.run_id)
    assert waiting is not None
    assert waiting.status == "paused"
    assert waiting.needs_migration is not None
    assert "k-new" in waiting.needs_migration
    assert downstream.deployed == []
    kinds = [event.kind for event in await bot.store.audit_events(run_id=run.run_id)]
    assert "tamper_detected" not in kinds
    assert "failed" not in kinds
    assert "execution_refused" not in kinds
    readiness = await bot.service.readiness()
    assert readiness is not None
    assert "lacks key id(s) k-new" in readiness
    decided = await bot.store.get_approval(approval.approval_id)
    assert decided is not None
    assert decided.status == "approved"  # the decision is kept

    restarted = await processes("bot-2", [new, old])  # the bot, restarted with the key
    await restarted.service.recover()
    await restarted.service.drain()
    done = await restarted.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert downstream.deployed == ["api"]
