"""The capability the bot gives each run of a Pydantic AI agent: its tools run the
bot's way.

Pydantic AI runs a tool through its capabilities' `wrap_tool_execute` once the call is
validated and, for a call that needed approval, approved (with an approver's
`override_args` applied). There the call is handed to the adapters' one loop
(`bot.adapters.calls.run_call`): a call people were asked about goes through the ledger
(claim -> replay policy -> run -> record; the service's journal re-checks its approval
right before), so a second resume of the same paused history answers the recorded
result without running the tool again; any other call runs in the bot's tool scope
(`current_tool_call()`), outside the ledger (a tool that asks for approval itself by
raising `ApprovalRequired` must not leave a claim behind). A call an approver changed
answers with a note first, so that the model knows it ran with other arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_json

from bot.adapters.calls import CallAsked, current_site, in_tool_scope, run_call
from bot.adapters.registration import ToolFacts
from bot.credentials import redact
from bot.runtime.dispatch import Done


class LedgerCapability(AbstractCapability[Any]):
    """See the module doc; `tools` give each tool its replay policy."""

    def __init__(self, tools: Mapping[str, ToolFacts]) -> None:
        self._tools = tools

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Any,
    ) -> Any:
        asked = CallAsked(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            arguments=call.args_as_dict(),
        )
        pending = current_site().pending(call.tool_call_id)
        if pending is None:
            with in_tool_scope(asked):
                return await handler(args)
        changed = current_site().state.amended_arguments(pending)

        async def invoke() -> Done:
            value = await handler(args)
            text = value if isinstance(value, str) else to_json(value).decode()
            return Done(content=_note(changed) + text, is_error=False)

        facts = self._tools.get(call.tool_name)
        policy = facts.replay_policy if facts is not None else "manual"
        done = await run_call(asked, policy=policy, invoke=invoke)
        return done.content


def _note(changed: dict[str, Any] | None) -> str:
    if changed is None:
        return ""
    shown = json.dumps(redact(changed)[0], ensure_ascii=False, sort_keys=True)
    return (
        "[Note: an approver changed this call's arguments before approving it; it ran "
        f"with {shown}.]\n"
    )
