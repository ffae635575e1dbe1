"""The bot's own run state of a run, for tests that look inside it."""

from __future__ import annotations

from bot.runtime import RunState
from bot.service import ApprovalService


async def own_state(service: ApprovalService, run_id: str) -> RunState:
    """The run's state, which these tests know the bot's own run core wrote."""
    state = await service.load_state(run_id)
    assert isinstance(state, RunState), f"run {run_id} was written by {state.engine}"
    return state
