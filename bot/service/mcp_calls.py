"""The service's desk for the MCP gateway: gated calls as runs (bot.mcp.calls.CallDesk).

`ask` finds the run that answers a call by its key, for every replica (the store's
`mcp_calls`): a key nobody holds is claimed with a new run id, and that run started like
any other (`start_run` of agent `mcp`: its root message, then the card, in the client's
channel, the client's Slack user as its requester). A key held by a run that still
answers it (working, paused, or finished within `retry_window`) is that run: the retry
attaches, and no second card is posted. A key held by a run that no longer answers it
(finished long ago, or never started: its starter died) is taken over by compare-and-set.

A client may have at most `max_waiting` calls waiting for people at once (counted by
the Slack user it acts for, on every replica): past that, a new call is refused with a
LimitError and nothing is stored, so a runaway or hostile agent cannot fill a channel
with cards.

`state` reads the run: its open approvals, an uncertain call, or, once it is over, the
result its sealed state holds for the client. `handed_out` frees the key once a client
has the outcome (and audits it), so the same call made afresh is asked afresh.

`RunWatch` is a notifier in front of the real one: every event of a run wakes the
gateway's requests waiting on that run in this process at once; a run that moves on
another replica is seen by polling (`moved` returns after at most `within` seconds).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta

from bot.clock import Clock, utc_now
from bot.credentials import redact_text
from bot.errors import ApprovalsError, LimitError
from bot.mcp.calls import (
    MCP_AGENT,
    Asked,
    CallState,
    Finished,
    GatedCall,
    Waiting,
    recorded_result,
    text_result,
)
from bot.service.events import Event, Location, Notifier
from bot.service.service import ApprovalService
from store.records import McpCallClaim, RunFilter, RunRecord

log = logging.getLogger(__name__)

STARTING_GRACE = timedelta(seconds=30)  # a claimed key's run may take this long to appear
TIDY_EVERY = timedelta(hours=1)
WORKING = frozenset({"running", "paused", "resuming"})


class RunWatch:
    """A notifier that wakes this process's waiters of a run, then tells `inner`."""

    def __init__(self, inner: Notifier) -> None:
        self._inner = inner
        self._waiting: dict[str, asyncio.Event] = {}

    async def notify(self, event: Event) -> Location | None:
        moved = self._waiting.pop(event.run.run_id, None)
        if moved is not None:
            moved.set()
        return await self._inner.notify(event)

    async def moved(self, run_id: str, *, within: float) -> None:
        """Return when an event of the run comes through here, or after `within` s."""
        signal = self._waiting.setdefault(run_id, asyncio.Event())
        try:
            await asyncio.wait_for(signal.wait(), max(within, 0.0))
        except TimeoutError:
            if self._waiting.get(run_id) is signal and not signal.is_set():
                self._waiting.pop(run_id, None)  # the next waiter makes a new one


class McpCalls:
    """See the module doc."""

    def __init__(
        self,
        service: ApprovalService,
        *,
        watch: RunWatch,
        retry_window: timedelta,
        max_waiting: int,
        clock: Clock = utc_now,
    ) -> None:
        self._service = service
        self._store = service.store
        self._watch = watch
        self._retry_window = retry_window
        self._max_waiting = max_waiting
        self._clock = clock
        self._tidied_at = clock()

    async def ask(self, call: GatedCall) -> Asked:
        candidate = uuid.uuid4().hex
        claim = await self._store.claim_mcp_call(call.call_key, run_id=candidate)
        while not claim.won:
            held = await self._store.get_run(claim.run_id)
            if self._answers(held, claim):
                log.info("mcp: a retry of %s attached to run %s", call.tool.exposed, claim.run_id)
                return Asked(run_id=claim.run_id, new=False)
            claim = await self._store.claim_mcp_call(
                call.call_key, run_id=candidate, replacing=claim.run_id
            )
        try:
            await self._refuse_past_the_limit(call)
        except LimitError:
            await self._store.release_mcp_call(call.call_key, run_id=candidate)
            raise
        await self._start(call, candidate)
        await self._tidy()
        return Asked(run_id=candidate, new=True)

    async def _refuse_past_the_limit(self, call: GatedCall) -> None:
        waiting = await self._store.list_runs(
            status="paused",
            where=RunFilter(agent_name=MCP_AGENT, requester=call.requester),
            limit=self._max_waiting,
        )
        if len(waiting) >= self._max_waiting:
            raise LimitError(
                f"{call.tool.exposed} was not asked: {len(waiting)} calls of this client "
                "already wait for people (the gateway's max_waiting); try again once some "
                "are decided"
            )

    def _answers(self, run: RunRecord | None, claim: McpCallClaim) -> bool:
        """Whether the run a key names still answers its call (see the module doc)."""
        now = self._clock()
        if run is None:
            return now - claim.claimed_at < STARTING_GRACE
        return run.status in WORKING or now - run.updated_at < self._retry_window

    async def _start(self, call: GatedCall, run_id: str) -> None:
        try:
            await self._service.start_run(
                agent_name=MCP_AGENT,
                task=call.task,
                requester=call.requester,
                channel=call.channel,
                context=call,
                run_id=run_id,
            )
        except ApprovalsError:
            await self._store.release_mcp_call(call.call_key, run_id=run_id)
            raise
        await self._store.append_audit(
            "mcp_call",
            actor=f"mcp:{call.client}",
            run_id=run_id,
            detail={
                "client": call.client,
                "upstream": call.tool.upstream,
                "tool": call.tool.name,
                "definition": call.tool.digest,
            },
        )

    async def state(self, run_id: str) -> CallState:
        run = await self._store.get_run(run_id)
        if run is None or run.status in ("running", "resuming"):
            return Waiting(run_id=run_id)
        if run.status == "paused" and run.needs_migration:
            return Waiting(run_id=run_id, held=run.needs_migration)
        if run.status == "paused":
            pending = await self._store.list_approvals(run_id=run_id, status="pending")
            ids = tuple(approval.approval_id for approval in pending)
            return Waiting(run_id=run_id, approval_ids=ids, uncertain=not ids)
        if run.status == "cancelled":
            text = "Not run: the call's run was cancelled in Slack."
            return Finished(
                run_id=run_id, result=text_result(text, is_error=True), outcome="cancelled"
            )
        if run.status == "completed":
            found = recorded_result(await self._service.load_state(run_id))
            if found is not None:
                result, outcome = found
                return Finished(run_id=run_id, result=result, outcome=outcome)
        return Finished(
            run_id=run_id,
            result=text_result(await self._failure(run), is_error=True),
            outcome="failed",
        )

    async def _failure(self, run: RunRecord) -> str:
        events = await self._store.audit_events(run_id=run.run_id)
        errors = [event.detail.get("error") for event in events if event.kind == "failed"]
        why = redact_text(str(errors[-1])) if errors else f"its run ended {run.status}"
        return f"The call failed in the gateway: {why}"

    async def moved(self, run_id: str, *, within: float) -> None:
        await self._watch.moved(run_id, within=within)

    async def handed_out(self, call: GatedCall, finished: Finished) -> None:
        if not await self._store.release_mcp_call(call.call_key, run_id=finished.run_id):
            return  # another request of the same call handed it out already
        await self._store.append_audit(
            "mcp_result",
            actor=f"mcp:{call.client}",
            run_id=finished.run_id,
            detail={"client": call.client, "tool": call.tool.exposed, "outcome": finished.outcome},
        )

    async def _tidy(self) -> None:
        """Now and then, forget the keys of calls finished long ago (never collected)."""
        now = self._clock()
        if now - self._tidied_at < TIDY_EVERY:
            return
        self._tidied_at = now
        forgotten = await self._store.forget_mcp_calls(before=now - self._retry_window)
        if forgotten:
            log.info("mcp: forgot %d call keys of finished calls", forgotten)
