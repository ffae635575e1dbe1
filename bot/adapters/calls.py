"""What a run of another framework gives the tools it runs, and the one way an adapter
runs a call: every adapter wraps its framework's tool invocation with `run_call`.

A `ToolSite` is set for the duration of one run (`site_scope`): the run's state (the
calls people were asked about, their execution keys and digests), the journal, the
runtime dependencies, the calls a human allowed to run again, and the calls found
unsettled. `run_call` gives the call the bot's view of it (`current_tool_call()`:
execution key, keyed digest, dependencies) and:

- a call people were asked about (it has a pending call with that tool call id) goes
  through the ledger (`bot.runtime.dispatch.run_once`: claim -> replay policy -> run ->
  record); the service's journal re-checks its approval there. A recorded result is
  returned without running the tool again; a call left uncertain is noted in the site
  and raises `CallUnsettled` (the run stops there for a human to reconcile it);
- any other call runs inside the tool scope only, outside the ledger (`ledger=True`
  puts it through the ledger too, keyed by the key the adapter gives it).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bot.errors import ApprovalsError, RunStateError
from bot.runtime import (
    EngineResult,
    ExternalRunState,
    Journal,
    PendingCall,
    ToolCallContext,
)
from bot.runtime.dispatch import Done, LedgerCall, Unsettled, run_once
from bot.runtime.tools import ReplayPolicyName, tool_call_scope


class CallUnsettled(Exception):
    """A call's outcome is uncertain (dispatched before, no result recorded, `manual`):
    the run stops and waits for a human to reconcile it."""


@dataclass(kw_only=True)
class ToolSite:
    """What one run gives its wrapped tools (see the module doc)."""

    state: ExternalRunState
    journal: Journal
    dependencies: Mapping[str, Any]
    context: Any = None
    redispatch: set[str] = field(default_factory=set)
    unsettled: list[str] = field(default_factory=list)
    errors: list[ApprovalsError] = field(default_factory=list)
    """The bot's own errors raised inside a tool wrapper (a ledger that could not be
    reached, a lease another worker holds): a framework that turns a tool's exception
    into a message for the model must not swallow them; the adapter raises the first."""

    def pending(self, tool_call_id: str) -> PendingCall | None:
        return next((c for c in self.state.pending_calls() if c.tool_call_id == tool_call_id), None)

    def stopped_uncertain(self) -> EngineResult:
        """The run stops at the calls found unsettled: the state it started from, with
        those calls uncertain, for a human to reconcile."""
        waiting = self.state.uncertain(self.unsettled)
        return EngineResult(
            final_output=None,
            interruptions=waiting.get_interruptions(),
            state=waiting,
            outcome="paused",
        )


_site: contextvars.ContextVar[ToolSite] = contextvars.ContextVar("approvals_bot_tool_site")


@contextmanager
def site_scope(site: ToolSite) -> Iterator[None]:
    """Make `site` what the wrapped tools of the code inside see (one run)."""
    token = _site.set(site)
    try:
        yield
    finally:
        _site.reset(token)


def current_site() -> ToolSite:
    try:
        return _site.get()
    except LookupError:
        raise RunStateError(
            "this tool was wrapped by approvals-bot and runs only in a run the bot started"
        ) from None


@dataclass(frozen=True, kw_only=True)
class CallAsked:
    """A framework's tool call as the adapter sees it: its id, its tool, the arguments it
    is about to run with, and the execution key it gets when nobody was asked about it
    (default: the key of the run's current stretch)."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    execution_key: str | None = None


@contextmanager
def in_tool_scope(call: CallAsked) -> Iterator[None]:
    """Run the code inside as `call` (`current_tool_call()`), outside the ledger."""
    site = current_site()
    with tool_call_scope(call_scope(site, call, site.pending(call.tool_call_id))):
        yield


async def run_call(
    call: CallAsked,
    *,
    policy: ReplayPolicyName,
    invoke: Callable[[], Awaitable[Done]],
    ledger: bool = False,
) -> Done:
    """Run one framework tool call the bot's way (module doc); `invoke()` runs the tool
    and answers its result as text (and whether it is an error)."""
    site = current_site()
    pending = site.pending(call.tool_call_id)
    scope = call_scope(site, call, pending)
    if pending is None and not ledger:
        with tool_call_scope(scope):
            return await invoke()
    ledger_call = LedgerCall(
        scope=scope,
        replay_policy=policy,
        redispatch=scope.execution_key in site.redispatch,
    )
    try:
        outcome = await run_once(site.journal, ledger_call, invoke=invoke)
    except ApprovalsError as error:
        site.errors.append(error)
        raise
    if isinstance(outcome, Unsettled):
        site.unsettled.append(scope.execution_key)
        raise CallUnsettled(f"call {scope.tool_call_id} ({scope.tool_name}) is uncertain")
    return outcome


def call_scope(site: ToolSite, call: CallAsked, pending: PendingCall | None) -> ToolCallContext:
    """The bot's view of this call: the key its card was made with (a call nobody was
    asked about gets the adapter's key, or that of the run's current stretch) and the
    keyed digest of the arguments it is about to run with."""
    state = site.state
    if pending is not None:
        key = pending.execution_key
    else:
        key = call.execution_key or state.key_for(call.tool_call_id)
    digest = state.digest_of(
        tool_name=call.tool_name, execution_key=key, arguments=dict(call.arguments)
    )
    return ToolCallContext(
        run_id=state.run_id,
        tool_call_id=call.tool_call_id,
        execution_key=key,
        digest=digest,
        tool_name=call.tool_name,
        attempt=1,
        dependencies=site.dependencies,
        context=site.context,
    )
