"""The gateway's answer to one client's `tools/call`: straight through, or through a person.

A tool the file lets pass (bot.mcp.catalog) is called upstream at once and its result
returned; nothing is stored. Any other call becomes a `GatedCall` for the desk (the
approval service): the same call retried attaches to the run already answering it, a
new one gets its card. The request then waits for the run's outcome, sending a progress
notification every `progress_every` (clients that honour them do not time out), for at
most `wait`. Past it the client is answered one of two ways:

- a client on the 2026 protocol gets `input_required` with only a request state: its SDK
  sends the same request again at once, which attaches to the same run and waits again,
  up to WAIT_ROUNDS times;
- any other client (and the last round) gets an error result saying which approval is
  pending and that the same call, made again, waits for it without asking again.

Arguments are checked against the tool's input schema first, where it can be checked
safely (bot.mcp.schemas): a call its tool would refuse asks nobody.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bot.canonical import canonical_arguments
from bot.errors import InputError, LimitError, UpstreamError
from bot.mcp.calls import CallDesk, CallState, Finished, GatedCall, Waiting, text_result
from bot.mcp.catalog import ListedTool
from bot.mcp.config import ClientConfig, GatewayConfig
from bot.mcp.execution import UpstreamSource
from bot.mcp.schemas import Checks
from bot.mcp.telemetry import McpMetrics
from bot.mcp.tokens import call_key

WAIT_ROUNDS = 8  # under the MCP SDK client's default of 10 input_required rounds
POLL_SECONDS = 1.0  # how often a waiting call looks at the database (another replica)
ROUND_STATE = "approvals-bot/wait:"

Reporter = Callable[[float, float, str], Awaitable[None]]
"""(progress, total, message): one progress notification to the waiting client."""


@dataclass(frozen=True, kw_only=True)
class Caller:
    """Who is calling: the client its token names, and its secret for call keys."""

    client: ClientConfig
    call_secret: bytes


@dataclass(frozen=True, kw_only=True)
class Answer:
    result: Mapping[str, Any]  # a CallToolResult, wire JSON


@dataclass(frozen=True, kw_only=True)
class WaitMore:
    """Answer `input_required` with this request state: the client asks again."""

    request_state: str


class Catalog(UpstreamSource, Protocol):
    def catalog(self) -> list[ListedTool]:
        """Every tool of every upstream, as last listed."""
        ...


class Gateway:
    """See the module doc."""

    def __init__(
        self,
        *,
        config: GatewayConfig,
        upstreams: Catalog,
        desk: CallDesk,
        metrics: McpMetrics | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._config = config
        self._upstreams = upstreams
        self._desk = desk
        self._metrics = metrics or McpMetrics(None)
        self._poll = poll_seconds
        self._stopping = False
        self._checks = Checks()

    def stop_waiting(self) -> None:
        """The bot is stopping: calls waiting for a decision answer now (still pending:
        call again), within a poll."""
        self._stopping = True

    def tools(self) -> list[dict[str, Any]]:
        """Every exposed tool, as `tools/list` answers."""
        return [tool.as_exposed() for tool in self._upstreams.catalog()]

    def may_wait(self, name: str) -> bool:
        """Whether a call of this exposed tool may wait for a person (False only for a
        tool the gateway exposes now and lets straight through)."""
        tool = self._upstreams.listed(name)
        return tool is None or tool.gated

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self._upstreams.listed(name)
        return tool.input_schema if tool is not None else None

    async def call(
        self,
        caller: Caller,
        name: str,
        arguments: Mapping[str, Any],
        *,
        report: Reporter,
        rounds_left: int | None = None,
    ) -> Answer | WaitMore:
        """Answer a call (see the module doc). `rounds_left`: how many more times a 2026
        client may be told to ask again (None: an older client, never). InputError for
        a tool the gateway does not expose."""
        if self._config.upstream_of(name) is None:
            raise InputError(f"there is no tool named {name[:100]!r}")
        tool = self._upstreams.listed(name)
        if tool is None:
            return Answer(
                result=text_result(
                    f"{name} is not available now: its upstream is down or no longer lists "
                    "it. Try again later.",
                    is_error=True,
                )
            )
        refused = self._bad_arguments(tool, arguments)
        if refused is not None:
            return Answer(result=text_result(refused, is_error=True))
        if not tool.gated:
            self._metrics.called(tool.upstream, gated=False)
            return Answer(result=await self._straight_through(tool, arguments))
        gated = GatedCall(
            client=caller.client.name,
            requester=caller.client.user,
            channel=caller.client.channel,
            tool=tool,
            arguments=dict(arguments),
            call_key=call_key(caller.call_secret, tool.exposed, arguments),
        )
        return await self._through_a_person(gated, report, rounds_left)

    def _bad_arguments(self, tool: ListedTool, arguments: Mapping[str, Any]) -> str | None:
        """Why the call's arguments cannot be asked about (or sent), or None."""
        try:
            canonical_arguments(arguments)  # what a digest and a key are made of
            self._checks.check(tool.digest, tool.input_schema, arguments)
        except InputError as error:
            return f"{tool.exposed} was not run: its arguments do not fit the tool: {error}"
        return None

    async def _straight_through(self, tool: ListedTool, arguments: Mapping[str, Any]) -> Any:
        try:
            return await self._upstreams.call(tool.upstream, tool.name, arguments)
        except UpstreamError as error:
            if error.sent:
                text = (
                    f"{tool.exposed}: upstream {tool.upstream} did not answer ({error}); the "
                    "call may or may not have taken effect."
                )
            else:
                text = f"{tool.exposed} was not run: {error}."
            return text_result(text, is_error=True)

    async def _through_a_person(
        self, call: GatedCall, report: Reporter, rounds_left: int | None
    ) -> Answer | WaitMore:
        try:
            asked = await self._desk.ask(call)
        except LimitError as error:
            return Answer(result=text_result(str(error), is_error=True))
        self._metrics.called(call.tool.upstream, gated=asked.new)
        state = await self._wait(asked.run_id, report)
        if isinstance(state, Finished):
            await self._desk.handed_out(call, state)
            return Answer(result=state.result)
        if rounds_left:
            return WaitMore(request_state=f"{ROUND_STATE}{rounds_left - 1}")
        return Answer(result=text_result(_still_waiting(call, state), is_error=True))

    async def _wait(self, run_id: str, report: Reporter) -> CallState:
        loop = asyncio.get_running_loop()
        wait = self._config.wait.total_seconds()
        every = self._config.progress_every.total_seconds()
        start = loop.time()
        deadline, next_report = start + wait, start
        while True:
            state = await self._desk.state(run_id)
            now = loop.time()
            if isinstance(state, Finished) or now >= deadline or self._stopping:
                return state
            if now >= next_report:
                await report(round(now - start, 3), wait, _progress_text(state))
                next_report = now + every
            await self._desk.moved(
                run_id, within=min(self._poll, deadline - now, next_report - now)
            )


def rounds_left(request_state: str | None) -> int:
    """How many more `input_required` rounds a 2026 client's request may get: WAIT_ROUNDS
    for a first request, else what its (echoed) request state says."""
    if request_state is None or not request_state.startswith(ROUND_STATE):
        return WAIT_ROUNDS
    try:
        return max(0, min(WAIT_ROUNDS, int(request_state.removeprefix(ROUND_STATE))))
    except ValueError:
        return 0


def _progress_text(state: Waiting) -> str:
    if state.held:
        return "held: this deployment cannot go on with the call now"
    if state.approval_ids:
        return f"waiting for a person to decide approval {', '.join(state.approval_ids)} in Slack"
    if state.uncertain:
        return "waiting for a person to reconcile the call's uncertain outcome in Slack"
    return "decided; running"


def _still_waiting(call: GatedCall, state: CallState) -> str:
    tool = call.tool.exposed
    again = f"Call {tool} again with the same arguments"
    if isinstance(state, Waiting) and state.held:
        return (
            f"{tool} cannot go on in this deployment now ({state.held}); nothing more has "
            f"run. An operator resolves it. {again} later to learn the outcome."
        )
    if isinstance(state, Waiting) and state.uncertain:
        return (
            f"The outcome of {tool} is uncertain: the gateway stopped while the call ran "
            "upstream, so it may or may not have taken effect. A person reconciles it in "
            f"Slack before anything else happens. {again} to learn the outcome."
        )
    if isinstance(state, Waiting) and state.approval_ids:
        return (
            f"Approval {', '.join(state.approval_ids)} is pending: a person decides in Slack "
            f"whether {tool} runs. Nothing has run yet. {again} to wait for the decision; it "
            "is not asked again."
        )
    return f"{tool} was approved and is running. {again} to get its result."
