"""SDK function tools, wrapped so that the calls people approve go through the bot's
execution ledger.

The SDK invokes a function tool as `on_invoke_tool(ctx, input_json)`. The wrapper of a
tool that needs approval hands the call to the adapters' one loop
(`bot.adapters.calls.run_call`: claim -> replay policy -> run -> record): a recorded
result is returned as is (a second resume of the same state never repeats the effect),
an approval the service's journal no longer finds standing answers "Not run: ...", and
an earlier dispatch that never recorded a result follows the tool's replay policy
(`manual` leaves the call uncertain and the run stops there: `CallUnsettled`).

Every wrapped tool, approval or not, runs inside `tool_call_scope`, so a tool written
for the bot (`current_tool_call()`: execution key, digest, runtime dependencies) runs
unchanged as an SDK function tool. What a run gives its tools lives in a `ToolSite`
set for the run's duration (`site_scope`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from bot.adapters.calls import (
    CallAsked,
    CallUnsettled,
    ToolSite,
    in_tool_scope,
    run_call,
    site_scope,
)
from bot.runtime.dispatch import Done
from bot.runtime.tools import ReplayPolicyName

__all__ = ["CallUnsettled", "ToolSite", "site_scope", "wrap_tool"]


def wrap_tool(tool: FunctionTool, *, policy: ReplayPolicyName) -> FunctionTool:
    """`tool` with an invoker that runs inside the bot's tool scope, and, when the tool
    may need approval, through the ledger under `policy`."""
    original = tool.on_invoke_tool
    gated = tool.needs_approval is not False

    async def invoke(ctx: ToolContext[Any], input_json: str) -> Any:
        call = CallAsked(
            tool_call_id=ctx.tool_call_id,
            tool_name=ctx.tool_name,
            arguments=_arguments(input_json),
        )
        if not gated:
            with in_tool_scope(call):
                return await original(ctx, input_json)

        async def run() -> Done:
            value = await original(ctx, input_json)
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return Done(content=text, is_error=False)

        done = await run_call(call, policy=policy, invoke=run, ledger=True)
        return done.content

    return dataclasses.replace(tool, on_invoke_tool=invoke)


def _arguments(input_json: str) -> dict[str, Any]:
    """The arguments the SDK is about to pass, as an object (what the digest covers)."""
    try:
        arguments = json.loads(input_json or "{}")
    except ValueError:
        return {"$unparsed": input_json}
    return arguments if isinstance(arguments, dict) else {"$value": arguments}
