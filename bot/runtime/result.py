"""What one `Runner.arun` comes back with, and how a run is asked to pause from outside.

    result = await Runner.arun(agent, "delete user u-1")
    if result.state is not None:          # paused: something to store and resume
        await db.save(result.state.to_json())
    else:                                 # finished: nothing to decide
        print(result.final_output)

`state` is None once the run finished (completed, or stopped at `max_turns`), so a
caller that stores `state` only when it is set never stores a finished run as one
waiting for a decision. `to_state()` is the run's state whatever the outcome: what a
follow-up message continues (`state.append_user_message(...)`) or a run stopped at
`max_turns` resumes from with a higher limit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.runtime.decisions import PendingCall
from bot.runtime.engine import RunOutcome

if TYPE_CHECKING:
    from bot.runtime.state import RunState

PauseCheck = Callable[[], Awaitable[bool]]
"""Asked before each model turn and each tool call: True stops the run there (paused)."""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """`final_output` is set when completed; `interruptions` (also `pending`) lists the
    calls a human must decide when paused; `state` is the state to store and resume
    while the run is paused (None once it finished); `to_state()` always has it."""

    final_output: str | None
    interruptions: list[PendingCall]
    outcome: RunOutcome
    _state: RunState = field(repr=False)

    @property
    def state(self) -> RunState | None:
        """The paused run's state, to store and resume; None once the run finished."""
        return self._state if self.outcome == "paused" else None

    @property
    def run_id(self) -> str:
        """The run's id (an AgentRuntime's session id)."""
        return self._state.run_id

    @property
    def pending(self) -> list[PendingCall]:
        """The calls a human must decide (`interruptions`), each with a `status` of
        `approval` or `uncertain` and the model's `call` (`id`, `name`, `input`)."""
        return self.interruptions

    def to_state(self) -> RunState:
        """The run's state whatever the outcome (a copy of the run the Runner made)."""
        return self._state


class PauseSignal:
    """Ask a run to pause from outside it (another task, a signal handler):

        pause = PauseSignal()
        task = asyncio.create_task(Runner.arun(agent, "...", pause=pause))
        pause.request()               # the Runner stops before its next step
        result = await task           # outcome "paused", nothing to decide

    The Runner asks before each model turn and each tool call, so a tool already
    running finishes and its result is recorded, and nothing new starts. Resume with
    `Runner.arun(agent, result.state)` (`clear()` first to reuse the same signal)."""

    __slots__ = ("_requested",)

    def __init__(self) -> None:
        self._requested = False

    def request(self) -> None:
        self._requested = True

    def clear(self) -> None:
        self._requested = False

    @property
    def requested(self) -> bool:
        return self._requested

    async def __call__(self) -> bool:
        return self._requested
