"""The approvals-and-recovery reference, run as written: its three samples verbatim (only
the imports are ours, each body inside a small typed function), against AgentRuntime
with the real store (its ledger and sealed runs), and the contract it states: replay
policies, execution keys passed downstream, pending approvals, uncertain outcomes and
how they are resolved, and the errors for a key the run lacks or a decision that does
not fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson
import pytest

from bot.errors import ResolutionError, UnknownExecutionKey
from bot.runtime import (
    Agent,
    AgentRuntime,
    PendingCall,
    PermissionLevel,
    ReplayPolicy,
    RunResult,
    ScriptedModel,
    ToolResult,
    current_tool_context,
)
from bot.runtime.model import ScriptStep
from store.api import Store
from store.journal import StoreJournal
from store.states import StoreRunStates
from tests.states import dispatched_by_a_dead_worker

# -- the samples, verbatim -------------------------------------------------------------------


def install_orders(agent: Agent, orders: Orders) -> None:
    @agent.tools.register(
        permission=PermissionLevel.ASK,
        replay_policy="idempotent",
    )
    async def create_order(customer_id: str) -> str:
        """Create an order for an approved customer."""
        key = current_tool_context().execution_key
        return await orders.create(customer_id, idempotency_key=key)


async def answer_approval(
    runtime: AgentRuntime, result: RunResult, allow: bool
) -> RunResult | None:
    pending = result.pending[0]
    print(pending.call.name, pending.call.input)
    if allow:
        return await runtime.approve(pending, resume=True)
    return await runtime.decline(pending, resume=True)


async def record_verified_result(runtime: AgentRuntime, pending: PendingCall, outcome: str) -> None:
    await runtime.resolve_tool(
        pending,
        result=ToolResult(pending.call.id, outcome),
    )


# -- the reader's side -------------------------------------------------------------------------


@dataclass
class Orders:
    """The application's order service: it deduplicates writes by idempotency key."""

    by_key: dict[str, str] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)

    async def create(self, customer_id: str, *, idempotency_key: str) -> str:
        self.writes.append(idempotency_key)
        order = self.by_key.setdefault(idempotency_key, f"order-{len(self.by_key) + 1}")
        return f"{order} for {customer_id}"


def shop(script: Sequence[ScriptStep]) -> Agent:
    return Agent(name="shop", instructions="Take orders.", tools=[], model=ScriptedModel(script))


ORDER: list[ScriptStep] = [[("create_order", {"customer_id": "c-42"})], "Order placed."]


def runtime_for(store: Store, agent: Agent) -> AgentRuntime:
    return AgentRuntime(
        agent, states=StoreRunStates(store), journal=StoreJournal(store, owner="worker-1")
    )


async def dead_worker_dispatched(
    store: Store, runtime: AgentRuntime, session_id: str, pending: PendingCall
) -> None:
    """What a worker that died while the tool ran leaves: its claim, with no result."""
    await dispatched_by_a_dead_worker(store, await runtime.load(session_id), pending)


# -- pending approvals -------------------------------------------------------------------------


async def test_an_ask_tool_pauses_persisted_and_an_approval_resumes_to_the_end(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    orders, agent = Orders(), shop(ORDER)
    install_orders(agent, orders)
    runtime = runtime_for(store, agent)
    result = await runtime.run("order for c-42")

    assert [p.status for p in result.pending] == ["approval"]
    run = await store.get_run(result.run_id)
    assert run is not None
    assert run.status == "paused"  # persisted, sealed
    assert orders.writes == []

    done = await answer_approval(runtime, result, True)

    assert capsys.readouterr().out == "create_order {'customer_id': 'c-42'}\n"
    assert done is not None
    assert (done.outcome, done.final_output) == ("completed", "Order placed.")
    assert orders.writes == [result.pending[0].execution_key]  # the key went downstream


async def test_a_declined_tool_never_runs_and_the_model_is_told(store: Store) -> None:
    orders, agent = Orders(), shop(ORDER)
    install_orders(agent, orders)
    runtime = runtime_for(store, agent)
    result = await runtime.run("order for c-42")

    done = await answer_approval(runtime, result, False)

    assert done is not None
    assert done.outcome == "completed"
    assert orders.writes == []
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert "rejected" in orjson.dumps(model.requests[-1].history).decode()


# -- replay policies and execution keys ----------------------------------------------------


async def test_an_interrupted_idempotent_call_runs_again_with_the_same_key(store: Store) -> None:
    orders, agent = Orders(), shop(ORDER)
    install_orders(agent, orders)
    runtime = runtime_for(store, agent)
    result = await runtime.run("order for c-42")
    [pending] = result.pending
    await runtime.approve(pending)
    await dead_worker_dispatched(
        store, runtime, result.run_id, pending
    )  # it may have created the order

    done = await runtime.resume(result.run_id)

    assert done.final_output == "Order placed."
    assert orders.writes == [pending.execution_key]
    assert len(orders.by_key) == 1
    [entry] = await store.ledger_entries(run_id=result.run_id)
    assert (entry.state, entry.attempt) == ("succeeded", 2)


def test_a_replay_policy_is_the_enum_or_its_string_and_the_tool_keeps_the_string() -> None:
    agent = shop(["ok"])

    @agent.tools.register(permission=PermissionLevel.ASK, replay_policy=ReplayPolicy.IDEMPOTENT)
    async def refund(order_id: str) -> str:
        """Refund an order."""
        return order_id

    @agent.tools.register(permission=PermissionLevel.ALLOW, replay_policy="safe")
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        return order_id

    assert repr(refund.replay_policy) == "'idempotent'"  # the plain string, not the enum
    assert (refund.replay_policy, refund.needs_approval) == ("idempotent", True)
    assert (lookup.replay_policy, lookup.needs_approval) == ("safe", False)
    assert agent.tool_named("refund") is refund


# -- uncertain outcomes --------------------------------------------------------------------


def charging_shop(charged: list[str]) -> Agent:
    agent = shop([[("charge_card", {"order_id": "o-7"})], "Charged."])

    @agent.tools.register(permission=PermissionLevel.ASK)  # replay policy: manual
    async def charge_card(order_id: str) -> str:
        """Charge the card of an order."""
        charged.append(order_id)
        return f"charged {order_id}"

    return agent


async def test_a_verified_result_settles_an_uncertain_call_without_running_it(
    store: Store,
) -> None:
    charged: list[str] = []
    runtime = runtime_for(store, charging_shop(charged))
    result = await runtime.run("charge o-7")
    await runtime.approve(result.pending[0])
    await dead_worker_dispatched(store, runtime, result.run_id, result.pending[0])
    stopped = await runtime.resume(result.run_id)
    [pending] = stopped.pending
    assert pending.status == "uncertain"

    await record_verified_result(runtime, pending, "charged o-7 (ch_123, checked)")
    done = await runtime.resume(result.run_id)

    assert (done.outcome, done.final_output, charged) == ("completed", "Charged.", [])
    [entry] = await store.ledger_entries(run_id=result.run_id)
    assert entry.state == "succeeded"


async def test_retry_or_abort_exactly_once_and_clear_errors_otherwise(store: Store) -> None:
    charged: list[str] = []
    runtime = runtime_for(store, charging_shop(charged))
    result = await runtime.run("charge o-7")
    [asked] = result.pending

    with pytest.raises(UnknownExecutionKey, match="'no-such-key'"):
        await runtime.approve("no-such-key")
    with pytest.raises(ResolutionError, match="waits for approval"):
        await runtime.resolve_tool(asked, retry=True)  # not uncertain: no fit

    await runtime.approve(asked)
    await dead_worker_dispatched(store, runtime, result.run_id, asked)
    [pending] = (await runtime.resume(result.run_id)).pending
    with pytest.raises(ResolutionError, match="exactly one; got retry=True and abort=True"):
        await runtime.resolve_tool(pending, retry=True, abort=True)
    with pytest.raises(ResolutionError, match="got none"):
        await runtime.resolve_tool(pending)

    await runtime.resolve_tool(pending.execution_key, retry=True, resume=True)
    assert charged == ["o-7"]  # possible repetition accepted explicitly: it ran again
