"""A gated call, as the gateway and the approval service pass it between them.

The gateway (bot.mcp.gateway) turns a client's `tools/call` that needs approval into a
`GatedCall` and hands it to a `CallDesk`, which the service implements
(bot.service.mcp_calls): `ask` attaches the call to the run already answering it (a
retry) or starts one, whose approval is asked like any other; `state` says where that
run stands; `moved` waits (briefly) for it to move; `handed_out` tells the desk a
client got the outcome.

Each gated call is one run of the gateway's engine (bot.mcp.engine, agent `mcp`). Its
state keeps a `CallRecord`: who asked, which tool as its upstream defined it, the
arguments as asked, and, once the run is over, the result the client gets (in the
sealed state, never in the clear).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from bot.mcp.catalog import ListedTool
from bot.runtime import AgentRun, ExternalRunState

MCP_AGENT = "mcp"
MCP_AGENT_VERSION = "1"

Outcome = Literal[
    "executed", "upstream_error", "rejected", "not_run", "failed", "cancelled", "reconciled"
]


@dataclass(frozen=True, kw_only=True)
class GatedCall:
    """A client's call that waits for a person."""

    client: str
    requester: str  # the Slack user the client acts for
    channel: str  # where its card goes
    tool: ListedTool  # as the upstream listed it when the call came
    arguments: dict[str, Any]
    call_key: str  # bot.mcp.tokens.call_key: the same call retried has the same key

    @property
    def task(self) -> str:
        """The run's task, as its thread's first message shows it."""
        return f"{self.tool.exposed} via MCP client {self.client}"


@dataclass(frozen=True, kw_only=True)
class Asked:
    """The run that answers a call; `new`: it was started for this request (else the
    request is a retry that attached to it)."""

    run_id: str
    new: bool


@dataclass(frozen=True, kw_only=True)
class Waiting:
    """The run has not answered yet: `approval_ids` wait for people; `uncertain`: a call
    whose effect is unknown waits for a person to reconcile it; `held`: why this
    deployment cannot go on with it now (its upstream left the gateway's file, say)."""

    run_id: str
    approval_ids: tuple[str, ...] = ()
    uncertain: bool = False
    held: str | None = None


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The run is over: `result` is the `CallToolResult` (wire JSON) the client gets."""

    run_id: str
    result: Mapping[str, Any]
    outcome: Outcome


CallState = Waiting | Finished


class CallDesk(Protocol):
    async def ask(self, call: GatedCall) -> Asked:
        """The run that answers `call`: the one a retry attaches to, or a new one (its
        approval asked; InputError and nothing stored when it cannot be)."""
        ...

    async def state(self, run_id: str) -> CallState: ...

    async def moved(self, run_id: str, *, within: float) -> None:
        """Return when the run may have moved, at the latest after `within` seconds."""
        ...

    async def handed_out(self, call: GatedCall, finished: Finished) -> None:
        """A client got the run's outcome: the call's key is free for a new call."""
        ...


@dataclass(frozen=True, kw_only=True)
class CallRecord:
    """What an MCP run's engine state holds (see the module doc)."""

    client: str
    upstream: str
    tool: str
    exposed: str
    asked: dict[str, Any]  # the arguments as the client sent them
    definition: dict[str, Any]
    definition_digest: str
    result: dict[str, Any] | None = None
    outcome: Outcome | None = None
    changed: list[str] = field(default_factory=list)  # what a re-ask found changed

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "upstream": self.upstream,
            "tool": self.tool,
            "exposed": self.exposed,
            "asked": self.asked,
            "definition": self.definition,
            "definition_digest": self.definition_digest,
            "result": self.result,
            "outcome": self.outcome,
            "changed": list(self.changed),
        }

    @classmethod
    def of(cls, call: GatedCall) -> CallRecord:
        return cls(
            client=call.client,
            upstream=call.tool.upstream,
            tool=call.tool.name,
            exposed=call.tool.exposed,
            asked=dict(call.arguments),
            definition=dict(call.tool.definition),
            definition_digest=call.tool.digest,
        )

    @classmethod
    def from_json(cls, data: Any) -> CallRecord:
        """The record in an engine state (RunStateError-free: a KeyError or TypeError
        for a state this engine did not write; callers map it)."""
        if not isinstance(data, dict):
            raise TypeError("an MCP run's engine state is an object")
        outcome = data.get("outcome")
        return cls(
            client=str(data["client"]),
            upstream=str(data["upstream"]),
            tool=str(data["tool"]),
            exposed=str(data["exposed"]),
            asked=dict(data["asked"]),
            definition=dict(data["definition"]),
            definition_digest=str(data["definition_digest"]),
            result=dict(data["result"]) if data.get("result") is not None else None,
            outcome=outcome,
            changed=[str(name) for name in data.get("changed") or []],
        )


def recorded_result(state: AgentRun) -> tuple[dict[str, Any], Outcome] | None:
    """The result an MCP run's state holds for its client, once it has one."""
    if not isinstance(state, ExternalRunState):
        return None
    try:
        record = CallRecord.from_json(state.engine_state)
    except (KeyError, TypeError, ValueError):
        return None
    if record.result is None or record.outcome is None:
        return None
    return record.result, record.outcome


def text_result(text: str, *, is_error: bool) -> dict[str, Any]:
    """A `CallToolResult` (wire JSON) of one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}
