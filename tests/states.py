"""Run states for tests that look inside them, and what a dead worker leaves behind."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import utc_now
from bot.runtime import AgentRun, PendingCall, RunState
from bot.service import ApprovalService
from store.api import Store
from tests.polling import until

DEAD_LEASE_SECONDS = 0.001


async def own_state(service: ApprovalService, run_id: str) -> RunState:
    """The run's state, which these tests know the bot's own run core wrote."""
    state = await service.load_state(run_id)
    assert isinstance(state, RunState), f"run {run_id} was written by {state.engine}"
    return state


async def dispatched_by_a_dead_worker(store: Store, state: AgentRun, call: PendingCall) -> None:
    """What a worker that died while the call's tool ran leaves: its claim on the call's
    execution key in the ledger, with no result, under a lease that runs out at once.

    Returns only once that lease has run out: a claim made within the lease's
    millisecond would still find it live (LeaseHeldError) on a fast machine."""
    claimed_at = utc_now()
    await store.ledger_claim(
        execution_key=call.execution_key,
        arguments_digest=state.call_digest(call),
        run_id=state.run_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        owner="dead-worker",
        lease_seconds=DEAD_LEASE_SECONDS,
    )
    lease_ends = claimed_at + timedelta(seconds=DEAD_LEASE_SECONDS)

    async def ran_out() -> bool | None:
        return True if utc_now() > lease_ends else None

    await until(ran_out, "the dead worker's lease never ran out")
