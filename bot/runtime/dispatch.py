"""Running one tool call through the journal, so no call runs twice by accident.

One loop for every engine (the run core's Runner and each adapter of another
framework): claim the call's execution key, apply the tool's replay policy to an
earlier dispatch that never recorded a result, run the call, record its result.

Intent is recorded before the tool runs and the raw result after it. A recorded result
is reused without calling the tool. A dispatch that never recorded a result (the process
died in between) follows the tool's replay policy: `safe` and `idempotent` run again
(with the same execution key), `manual` leaves the call uncertain for a human.

    outcome = await run_once(journal, LedgerCall(scope=..., replay_policy="idempotent"),
                             invoke=lambda: ...)  # -> Done, or Unsettled

`dispatch` is the Runner's use of it: a bot `Tool` whose failures become error results.
"""

from __future__ import annotations

import dataclasses
import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.credentials import redact_text
from bot.errors import InputError
from bot.runtime.journal import Fresh, Interrupted, Journal, Recorded
from bot.runtime.model import ToolCallItem
from bot.runtime.tools import (
    ReplayPolicyName,
    Tool,
    ToolCallContext,
    invalid_arguments,
    tool_call_scope,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Done:
    content: str
    is_error: bool


@dataclass(frozen=True, kw_only=True)
class Unsettled:
    """The call may or may not have taken effect: a human has to reconcile it."""


Outcome = Done | Unsettled


@dataclass(frozen=True, kw_only=True)
class LedgerCall:
    """One call about to run through the journal: the tool's view of it (`scope`: run,
    call id, execution key, keyed digest, dependencies; its `attempt` is the claim's),
    the tool's replay policy, and whether a human allowed running it again."""

    scope: ToolCallContext
    replay_policy: ReplayPolicyName
    redispatch: bool = False


async def run_once(
    journal: Journal, call: LedgerCall, *, invoke: Callable[[], Awaitable[Done]]
) -> Outcome:
    """Claim `call`'s execution key in `journal`, then: a recorded result is returned as
    is; an interrupted earlier dispatch follows the replay policy; a fresh claim runs
    `invoke()` inside the tool call scope (`current_tool_call()`) and records what it
    returns. Whatever `invoke` raises propagates, nothing recorded (the claim stays
    open: the next claim finds it interrupted)."""
    scope = call.scope
    claim_args = {
        "execution_key": scope.execution_key,
        "arguments_digest": scope.digest,
        "run_id": scope.run_id,
        "tool_call_id": scope.tool_call_id,
        "tool_name": scope.tool_name,
    }
    claim = await journal.claim(**claim_args, redispatch=call.redispatch)
    if isinstance(claim, Interrupted):
        if call.replay_policy == "manual":
            logger.warning(
                "call %s (%s) was interrupted; waiting for a human",
                scope.tool_call_id,
                scope.tool_name,
            )
            await journal.mark_uncertain(execution_key=scope.execution_key)
            return Unsettled()
        logger.info(
            "re-dispatching interrupted call %s (%s, %s)",
            scope.tool_call_id,
            scope.tool_name,
            call.replay_policy,
        )
        claim = await journal.claim(**claim_args, redispatch=True)
    if isinstance(claim, Recorded):
        return Done(content=claim.result, is_error=claim.is_error)
    if not isinstance(claim, Fresh):  # Uncertain, or Interrupted once more
        return Unsettled()
    with tool_call_scope(dataclasses.replace(scope, attempt=claim.attempt)):
        done = await invoke()
    await journal.record_result(
        execution_key=scope.execution_key,
        lease_token=claim.lease_token,
        result=done.content,
        is_error=done.is_error,
    )
    return done


@dataclass(frozen=True, kw_only=True)
class CallSite:
    """Everything a tool invocation may see besides its arguments."""

    run_id: str
    journal: Journal
    dependencies: Mapping[str, Any]
    context: Any


async def dispatch(
    site: CallSite,
    tool: Tool,
    call: ToolCallItem,
    *,
    execution_key: str,
    digest: str,
    redispatch: bool,
) -> Outcome:
    """Run `call` through the journal. `digest` is the call's keyed digest (the one its
    card showed): the journal keeps it and compares it, and the tool can read it."""
    scope = ToolCallContext(
        run_id=site.run_id,
        tool_call_id=call["id"],
        execution_key=execution_key,
        digest=digest,
        tool_name=tool.name,
        attempt=1,
        dependencies=site.dependencies,
        context=site.context,
    )
    ledger_call = LedgerCall(scope=scope, replay_policy=tool.replay_policy, redispatch=redispatch)
    return await run_once(
        site.journal, ledger_call, invoke=lambda: _invoke(tool, call["arguments"])
    )


async def _invoke(tool: Tool, arguments: dict[str, Any]) -> Done:
    """The tool's result, or its failure as an error result. A failure's text (an HTTP
    client's error often quotes the URL or header it sent) goes to the model, the stored
    state and the log only with its credential-shaped parts redacted."""
    try:
        return Done(content=await tool.invoke(arguments), is_error=False)
    except InputError as error:
        problem = redact_text(str(error))
        return Done(content=invalid_arguments(tool.name, problem), is_error=True)
    except Exception as error:
        trace = redact_text("".join(traceback.format_exception(error)).rstrip())
        logger.warning("tool %s raised %s\n%s", tool.name, type(error).__name__, trace)
        problem = redact_text(str(error))
        return Done(
            content=f"Tool {tool.name!r} failed: {type(error).__name__}: {problem}", is_error=True
        )
