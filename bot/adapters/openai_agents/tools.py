"""SDK function tools, wrapped so that the calls people approve go through the bot's
execution ledger.

The SDK invokes a function tool as `on_invoke_tool(ctx, input_json)`. The wrapper of a
tool that needs approval:

1. finds the call's execution key (the one its card's digest was made with) and computes
   the keyed digest of the arguments the SDK is about to pass;
2. claims the key in the journal (the service's journal re-checks the approval there:
   revoked, expired, another digest, an approver no longer eligible -> "Not run: ...");
3. runs the tool only on a fresh claim and records its result; a recorded result is
   returned as is (a second resume of the same state never repeats the effect);
4. an earlier dispatch that never recorded a result follows the tool's replay policy:
   `safe` and `idempotent` run again with the same key, `manual` leaves the call
   uncertain for a human, and the run stops there (`CallUnsettled`).

Every wrapped tool, approval or not, runs inside `tool_call_scope`, so a tool written
for the bot (`current_tool_call()`: execution key, digest, runtime dependencies) runs
unchanged as an SDK function tool. What a run gives its tools lives in a `ToolSite`
set for the run's duration (`site_scope`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from bot.errors import RunStateError
from bot.runtime import ExternalRunState, Journal, PendingCall, ReplayPolicy, ToolCallContext
from bot.runtime.journal import Fresh, Interrupted, Recorded
from bot.runtime.tools import tool_call_scope

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]


class CallUnsettled(Exception):
    """A call's outcome is uncertain (dispatched before, no result recorded, `manual`):
    the run stops and waits for a human to reconcile it."""


@dataclass(kw_only=True)
class ToolSite:
    """What one run gives its wrapped tools: its state (keys and digests), the journal,
    the runtime dependencies, the calls a human allowed to run again, and the calls found
    unsettled (filled in by the tools)."""

    state: ExternalRunState
    journal: Journal
    dependencies: Mapping[str, Any]
    context: Any = None
    redispatch: set[str] = field(default_factory=set)
    unsettled: list[str] = field(default_factory=list)

    def pending(self, tool_call_id: str) -> PendingCall | None:
        return next((c for c in self.state.pending_calls() if c.tool_call_id == tool_call_id), None)


_site: contextvars.ContextVar[ToolSite] = contextvars.ContextVar("approvals_bot_sdk_site")


@contextmanager
def site_scope(site: ToolSite) -> Iterator[None]:
    """Make `site` what the wrapped tools of the code inside see (one run)."""
    token = _site.set(site)
    try:
        yield
    finally:
        _site.reset(token)


def wrap_tool(tool: FunctionTool, *, policy: ReplayPolicy) -> FunctionTool:
    """`tool` with an invoker that runs inside the bot's tool scope, and, when the tool
    may need approval, through the ledger under `policy`."""
    original = tool.on_invoke_tool
    if tool.needs_approval is False:
        return dataclasses.replace(tool, on_invoke_tool=_scoped(original))
    return dataclasses.replace(tool, on_invoke_tool=_through_ledger(original, policy))


def _scoped(original: Invoker) -> Invoker:
    async def invoke(ctx: ToolContext[Any], input_json: str) -> Any:
        site = _current_site()
        call = _call_scope(site, ctx, input_json, attempt=1)
        with tool_call_scope(call):
            return await original(ctx, input_json)

    return invoke


def _through_ledger(original: Invoker, policy: ReplayPolicy) -> Invoker:
    async def invoke(ctx: ToolContext[Any], input_json: str) -> Any:
        site = _current_site()
        scope = _call_scope(site, ctx, input_json, attempt=1)
        claim_args = {
            "execution_key": scope.execution_key,
            "arguments_digest": scope.digest,
            "run_id": scope.run_id,
            "tool_call_id": scope.tool_call_id,
            "tool_name": scope.tool_name,
        }
        redispatch = scope.execution_key in site.redispatch
        claim = await site.journal.claim(**claim_args, redispatch=redispatch)
        if isinstance(claim, Interrupted) and policy != "manual":
            claim = await site.journal.claim(**claim_args, redispatch=True)
        elif isinstance(claim, Interrupted):
            await site.journal.mark_uncertain(execution_key=scope.execution_key)
        if isinstance(claim, Recorded):
            return claim.result
        if not isinstance(claim, Fresh):  # Interrupted (manual) or Uncertain
            site.unsettled.append(scope.execution_key)
            raise CallUnsettled(f"call {scope.tool_call_id} ({scope.tool_name}) is uncertain")
        with tool_call_scope(dataclasses.replace(scope, attempt=claim.attempt)):
            value = await original(ctx, input_json)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        await site.journal.record_result(
            execution_key=scope.execution_key,
            lease_token=claim.lease_token,
            result=text,
            is_error=False,
        )
        return text

    return invoke


def _current_site() -> ToolSite:
    try:
        return _site.get()
    except LookupError:
        raise RunStateError(
            "this tool was wrapped by approvals-bot and runs only in a run the bot started"
        ) from None


def _call_scope(
    site: ToolSite, ctx: ToolContext[Any], input_json: str, *, attempt: int
) -> ToolCallContext:
    """The bot's view of this call: the key its card was made with (a call nobody was
    asked about gets the key of the run's current stretch) and its keyed digest."""
    state = site.state
    pending = site.pending(ctx.tool_call_id)
    key = pending.execution_key if pending is not None else state.key_for(ctx.tool_call_id)
    try:
        arguments = json.loads(input_json or "{}")
    except ValueError:
        arguments = {"$unparsed": input_json}
    digest = state.digest_of(
        tool_name=ctx.tool_name,
        execution_key=key,
        arguments=arguments if isinstance(arguments, dict) else {"$value": arguments},
    )
    return ToolCallContext(
        run_id=state.run_id,
        tool_call_id=ctx.tool_call_id,
        execution_key=key,
        digest=digest,
        tool_name=ctx.tool_name,
        attempt=attempt,
        dependencies=site.dependencies,
        context=site.context,
    )
