"""Running one tool call through the journal, so no call runs twice by accident.

Intent is recorded before the tool runs and the raw result after it. A recorded result
is reused without calling the tool. A dispatch that never recorded a result (the process
died in between) follows the tool's replay policy: `safe` and `idempotent` run again
(with the same execution key), `manual` leaves the call uncertain for a human.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.credentials import redact_text
from bot.errors import InputError
from bot.runtime.journal import Fresh, Interrupted, Journal, Recorded, Uncertain
from bot.runtime.model import ToolCallItem
from bot.runtime.tools import Tool, ToolCallContext, invalid_arguments, tool_call_scope

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
    claim_args = {
        "execution_key": execution_key,
        "arguments_digest": digest,
        "run_id": site.run_id,
        "tool_call_id": call["id"],
        "tool_name": tool.name,
    }
    claim = await site.journal.claim(**claim_args, redispatch=redispatch)
    if isinstance(claim, Interrupted):
        if tool.replay_policy == "manual":
            logger.warning(
                "call %s (%s) was interrupted; waiting for a human", call["id"], tool.name
            )
            await site.journal.mark_uncertain(execution_key=execution_key)
            return Unsettled()
        logger.info(
            "re-dispatching interrupted call %s (%s, %s)", call["id"], tool.name, tool.replay_policy
        )
        claim = await site.journal.claim(**claim_args, redispatch=True)
    if isinstance(claim, Recorded):
        return Done(content=claim.result, is_error=claim.is_error)
    if isinstance(claim, Uncertain | Interrupted):
        return Unsettled()
    return await _run_fresh(
        site, tool, call, execution_key=execution_key, digest=digest, claim=claim
    )


async def _run_fresh(
    site: CallSite,
    tool: Tool,
    call: ToolCallItem,
    *,
    execution_key: str,
    digest: str,
    claim: Fresh,
) -> Done:
    scope = ToolCallContext(
        run_id=site.run_id,
        tool_call_id=call["id"],
        execution_key=execution_key,
        digest=digest,
        tool_name=tool.name,
        attempt=claim.attempt,
        dependencies=site.dependencies,
        context=site.context,
    )
    with tool_call_scope(scope):
        done = await _invoke(tool, call["arguments"])
    await site.journal.record_result(
        execution_key=execution_key,
        lease_token=claim.lease_token,
        result=done.content,
        is_error=done.is_error,
    )
    return done


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
