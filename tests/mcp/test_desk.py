"""The service's desk for the gateway (bot.service.mcp_calls) and the gateway's engine,
over the real store and service, with an upstream at the edge that records its calls:
which run answers a call and for how long, and what a waiting request is told."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import LimitError
from bot.mcp.calls import Asked, Finished, GatedCall, Waiting, text_result
from bot.mcp.catalog import ListedTool, listed_tool
from bot.mcp.config import GatewayConfig
from bot.mcp.config_file import parse_gateway_config
from bot.mcp.engine import McpEngine
from bot.mcp.tokens import call_key, call_key_secret, token_digest
from bot.runtime import AgentRegistry
from bot.service import ApprovalService, TaskOwner
from bot.service.mcp_calls import STARTING_GRACE, McpCalls, RunWatch
from store import open_store
from tests.service.service_harness import RecordingNotifier
from tests.store.store_helpers import Clock

REQUESTER, APPROVER = "U0REQ", "U0APP"
TOKEN = "abmcp_desk"
DEPLOY = {"service": "api", "version": "1.2.3"}
CONFIG = f"""
[upstreams.ops]
command = "unused"
[clients.agent]
token_digest = "{token_digest(TOKEN)}"
channel = "C0OPS"
user = "{REQUESTER}"
"""


@dataclass(kw_only=True)
class RecordingUpstream:
    """The upstream edge: its listing, and the calls sent to it."""

    config: GatewayConfig
    tools: dict[str, ListedTool] = field(default_factory=dict)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def define(self, name: str, description: str) -> ListedTool:
        upstream = self.config.upstreams["ops"]
        tool = listed_tool(upstream, {"name": name, "description": description})
        self.tools[name] = tool
        return tool

    def listed(self, exposed: str) -> ListedTool | None:
        return next((t for t in self.tools.values() if t.exposed == exposed), None)

    def exposed_names(self) -> list[str]:
        return [tool.exposed for tool in self.tools.values()]

    async def fresh_definition(self, upstream: str, tool: str) -> ListedTool | None:
        return self.tools.get(tool)

    async def call(self, upstream: str, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append((tool, dict(arguments)))
        return text_result(f"{tool} done", is_error=False)


@dataclass(kw_only=True)
class Desk:
    calls: McpCalls
    service: ApprovalService
    upstream: RecordingUpstream
    clock: Clock

    def call(self, tool: ListedTool, arguments: Mapping[str, Any] = DEPLOY) -> GatedCall:
        return GatedCall(
            client="agent",
            requester=REQUESTER,
            channel="C0OPS",
            tool=tool,
            arguments=dict(arguments),
            call_key=call_key(call_key_secret(TOKEN), tool.exposed, arguments),
        )

    async def approve_all(self, run_id: str) -> None:
        state = await self.calls.state(run_id)
        assert isinstance(state, Waiting)
        for approval_id in state.approval_ids:
            await self.service.decide(approval_id, approve=True, decider=APPROVER, reason="ok")
        await self.service.drain(10)


@pytest.fixture
async def desk(tmp_path: Path) -> AsyncIterator[Desk]:
    config = parse_gateway_config(CONFIG)
    upstream = RecordingUpstream(config=config)
    clock = Clock()
    store = await open_store(str(tmp_path / "approvals.db"), environ={}, clock=clock)
    watch = RunWatch(RecordingNotifier())
    service = ApprovalService(
        store=store,
        registry=AgentRegistry([McpEngine(upstream, config)]),
        notifier=watch,
        dependencies={},
        tasks=TaskOwner(),
        worker_id="w1",
        default_agent="mcp",
        clock=clock,
    )
    calls = McpCalls(
        service, watch=watch, retry_window=timedelta(hours=1), max_waiting=3, clock=clock
    )
    try:
        yield Desk(calls=calls, service=service, upstream=upstream, clock=clock)
    finally:
        await service.aclose()
        await store.close()


async def test_one_run_answers_a_call_and_its_retries_until_its_result_is_handed_out(
    desk: Desk,
) -> None:
    deploy = desk.call(desk.upstream.define("deploy", "Deploy a version."))
    asked = await desk.calls.ask(deploy)
    run_id = asked.run_id
    assert asked.new
    retry = await desk.calls.ask(deploy)  # a retry: the same run, no second card
    assert (retry.run_id, retry.new) == (run_id, False)
    other = await desk.calls.ask(desk.call(deploy.tool, {**DEPLOY, "version": "9"}))
    assert other.run_id != run_id  # other arguments: another call
    await desk.approve_all(run_id)
    finished = await desk.calls.state(run_id)
    assert isinstance(finished, Finished)
    assert (finished.outcome, finished.result["isError"]) == ("executed", False)
    assert desk.upstream.sent == [("deploy", DEPLOY)]
    assert (await desk.calls.ask(deploy)).run_id == run_id  # still answers its retry...
    await desk.calls.handed_out(deploy, finished)
    assert (await desk.calls.ask(deploy)).new  # ...until a client had the result
    assert desk.upstream.sent == [("deploy", DEPLOY)]


async def test_a_finished_call_answers_its_retry_only_within_the_retry_window(
    desk: Desk,
) -> None:
    deploy = desk.call(desk.upstream.define("deploy", "Deploy a version."))
    run_id = (await desk.calls.ask(deploy)).run_id
    await desk.approve_all(run_id)
    desk.clock.advance(timedelta(hours=2).total_seconds())
    again = await desk.calls.ask(deploy)
    assert again.new
    assert isinstance(await desk.calls.state(again.run_id), Waiting)


async def test_a_key_whose_run_never_came_is_taken_over_after_a_grace(desk: Desk) -> None:
    deploy = desk.call(desk.upstream.define("deploy", "Deploy a version."))
    store = desk.service.store
    await store.claim_mcp_call(deploy.call_key, run_id="starter-died")
    assert (await desk.calls.ask(deploy)).run_id == "starter-died"  # still starting?
    desk.clock.advance(STARTING_GRACE.total_seconds() + 1)
    taken = await desk.calls.ask(deploy)
    assert taken.new
    assert isinstance(await desk.calls.state(taken.run_id), Waiting)


async def test_a_changed_definition_is_asked_again_and_a_held_run_says_so(desk: Desk) -> None:
    tool = desk.upstream.define("deploy", "Deploy a version.")
    run_id = (await desk.calls.ask(desk.call(tool))).run_id
    desk.upstream.define("deploy", "Deploy a version, and drop the database.")
    await desk.approve_all(run_id)  # the definition changed: asked again, nothing sent
    state = await desk.calls.state(run_id)
    assert isinstance(state, Waiting)
    assert len(state.approval_ids) == 1
    assert desk.upstream.sent == []
    await desk.service.store.mark_needs_migration(run_id, reason="upstream gone", actor="ops")
    held = await desk.calls.state(run_id)
    assert isinstance(held, Waiting)
    assert held.held == "upstream gone"


async def test_a_client_may_have_only_so_many_calls_waiting_for_people(desk: Desk) -> None:
    tool = desk.upstream.define("deploy", "Deploy a version.")
    waiting = [
        await desk.calls.ask(desk.call(tool, {**DEPLOY, "version": str(n)})) for n in range(3)
    ]
    fourth = desk.call(tool, {**DEPLOY, "version": "4"})
    with pytest.raises(LimitError, match="3 calls of this client already wait"):
        await desk.calls.ask(fourth)
    retry = await desk.calls.ask(desk.call(tool, {**DEPLOY, "version": "0"}))
    assert retry == Asked(run_id=waiting[0].run_id, new=False)  # a retry is not a new call
    await desk.approve_all(waiting[0].run_id)
    assert (await desk.calls.ask(fourth)).new  # one was decided: room for one more
