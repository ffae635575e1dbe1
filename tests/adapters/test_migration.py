"""Runs this deployment cannot resume wait for a migration instead of failing: a paused
run whose agent version is no longer registered (ours or an SDK agent), an SDK state of a
schema the installed SDK cannot read, an SDK agent whose tool was renamed. The run stays
paused with its decisions, says why (run row, thread, `runs show`), and resumes once the
version is back, or is cancelled."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from agents import function_tool

from bot.adapters.openai_agents import OpenAIAgentsEngine, build_ops_openai_agent
from bot.agents import builtin_registry
from bot.commands.runs import render_run_detail, run_detail_json
from bot.demo import build_ops_agent
from bot.runtime import AgentRegistry, ExternalRunState
from bot.service.events import RunNeedsMigration
from store.records import RunRecord
from tests.service.service_harness import APPROVER, REQUESTER, Harness


async def paused_then_closed(open_harness: Callable[..., Any], agent: str) -> tuple[RunRecord, str]:
    first: Harness = await open_harness()
    run = await first.service.start_run(
        agent_name=agent, task="deploy payments 1.2.3", requester=REQUESTER, channel="C-ops"
    )
    [approval] = await first.pending(run.run_id)
    await first.service.aclose()
    await first.store.close()
    first.closed = True
    return run, approval.approval_id


async def decide_and_wait(harness: Harness, approval_id: str) -> RunRecord:
    await harness.service.decide(approval_id, approve=True, decider=APPROVER, reason="go")
    await harness.service.drain()
    approval = await harness.store.get_approval(approval_id)
    assert approval is not None
    run = await harness.store.get_run(approval.run_id)
    assert run is not None
    return run


def without(name: str) -> AgentRegistry:
    return AgentRegistry(agent for agent in builtin_registry() if agent.name != name)


async def test_a_paused_run_of_an_agent_version_gone_waits_and_resumes_when_it_is_back(
    open_harness: Callable[..., Any],
) -> None:
    run, approval_id = await paused_then_closed(open_harness, "ops")
    newer = AgentRegistry([dataclasses.replace(build_ops_agent(), version="2")])
    gone: Harness = await open_harness(registry=newer)

    waiting = await decide_and_wait(gone, approval_id)

    assert waiting.status == "paused"
    assert waiting.needs_migration is not None
    assert "'ops' version '1' is not registered" in waiting.needs_migration
    [told] = gone.notifier.of(RunNeedsMigration)
    assert told.reason == waiting.needs_migration
    assert gone.effect_lines() == []
    approval = await gone.store.get_approval(approval_id)
    assert approval is not None
    assert approval.status == "approved"  # the decision is kept
    shown = render_run_detail(run_detail_json(waiting, [approval], [], None, reveal=False))
    assert "needs migration: agent 'ops' version '1' is not registered" in shown
    kinds = [event.kind for event in await gone.store.audit_events(run_id=run.run_id)]
    assert "needs_migration" in kinds
    await gone.service.aclose()
    await gone.store.close()
    gone.closed = True

    back: Harness = await open_harness()  # version 1 deployed again
    assert await back.service.recover() == 1
    await back.service.drain()

    done = await back.store.get_run(run.run_id)
    assert done is not None
    assert (done.status, done.needs_migration) == ("completed", None)
    assert len(back.effect_lines()) == 1


async def test_an_sdk_run_whose_agent_is_gone_can_be_cancelled(
    open_harness: Callable[..., Any],
) -> None:
    run, approval_id = await paused_then_closed(open_harness, "ops-openai")
    gone: Harness = await open_harness(registry=without("ops-openai"))

    waiting = await decide_and_wait(gone, approval_id)
    assert waiting.status == "paused"
    assert "'ops-openai' version '1' is not registered" in str(waiting.needs_migration)

    outcome = await gone.service.cancel_run(run.run_id, actor=REQUESTER, reason="retired")

    assert outcome.won
    assert outcome.run.status == "cancelled"
    assert gone.effect_lines() == []


async def test_an_sdk_state_of_a_newer_schema_waits_for_migration(harness: Harness) -> None:
    run = await harness.service.start_run(
        agent_name="ops-openai", task="deploy payments 1.2.3", requester=REQUESTER, channel="C-ops"
    )
    [approval] = await harness.pending(run.run_id)
    # what a deployment with a newer SDK would have written
    data = json.loads((await harness.service.load_state(run.run_id)).to_json())
    data["engine"] = {"name": "openai-agents", "version": "9.0.0", "schema_version": "9.0"}
    data["engine_state"]["paused"]["$schemaVersion"] = "9.0"
    newer = ExternalRunState.from_payload(data)
    current = await harness.store.get_run(run.run_id)
    assert current is not None
    await harness.store.save_run_state(
        run.run_id,
        expected_version=current.version,
        state_json=newer.to_json(),
        status="paused",
        schema_version=newer.schema_version,
    )

    waiting = await decide_and_wait(harness, approval.approval_id)

    assert waiting.status == "paused"
    reason = str(waiting.needs_migration)
    assert "schema 9.0" in reason
    assert "openai-agents 9.0.0" in reason
    assert harness.effect_lines() == []


async def test_an_sdk_agent_whose_tool_was_renamed_waits_for_migration(
    open_harness: Callable[..., Any],
) -> None:
    _, approval_id = await paused_then_closed(open_harness, "ops-openai")
    original = build_ops_openai_agent().sdk_agent

    @function_tool(name_override="deploy", needs_approval=True)
    async def deploy(service: str, version: str) -> str:
        """Deploy a release (renamed from deploy_release)."""
        return f"deployed {service} {version}"

    renamed = OpenAIAgentsEngine(original.clone(tools=[deploy, *original.tools[1:]]), version="1")
    harness: Harness = await open_harness(registry=AgentRegistry([build_ops_agent(), renamed]))

    waiting = await decide_and_wait(harness, approval_id)

    assert waiting.status == "paused"
    assert "waits on deploy_release, which agent 'ops-openai' version '1' no longer has" in str(
        waiting.needs_migration
    )
    assert harness.effect_lines() == []
