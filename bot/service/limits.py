"""The policy's limits on what one request may set in motion (`[limits]` in the policy
file, bot.policy.rules.Limits): how long a task may be, how many tool calls one model
turn and how many approvals one run may ask for at once.

A task that is too long is refused before anything is stored. The runner stops a model
turn with too many calls before any of them runs (`Runner.arun(max_tool_calls_per_turn)`,
bot.service.execution passes the limit), and a pause on too many approvals stops before
any row or card; the run then fails with one line that names the limit.
"""

from __future__ import annotations

from bot.errors import InputError, LimitError
from bot.policy.rules import Limits
from bot.runtime import EngineResult


def checked_task(limits: Limits, task: str) -> str:
    """The task, stripped; InputError when it is empty or too long."""
    text = task.strip()
    if not text:
        raise InputError("the task is empty; say what the agent should do")
    if len(text) > limits.task_chars:
        raise InputError(
            f"the task is {len(text)} characters long; the limit is {limits.task_chars} "
            "(limits.task_chars)"
        )
    return text


def check_pending(limits: Limits, result: EngineResult) -> None:
    """LimitError when the run pauses on more approvals than the policy allows at once
    (none of that turn's calls ran: a turn pauses before any of its calls runs)."""
    asked = sum(1 for call in result.interruptions if call.status == "approval")
    limit = limits.pending_approvals_per_run
    if asked > limit:
        raise LimitError(
            f"the run asked for {asked} approvals at once; the limit is {limit} per run, so "
            "none of its calls ran (limits.pending_approvals_per_run)"
        )


def calls_per_turn_exceeded(error: LimitError) -> LimitError:
    """The runner's refusal of a crowded turn, naming the policy key."""
    return LimitError(f"{error} (limits.tool_calls_per_turn)")
