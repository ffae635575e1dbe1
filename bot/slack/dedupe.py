"""Slack's redeliveries and replayed requests, answered once across every worker.

Two kinds of repeat, both remembered in the database (through the service's
`remember_request`, store.api.RequestMemoryStore), so that whichever replica a repeat
reaches, it is answered without being handled again:

- a redelivered event: Slack retries an event it thinks we missed (`X-Slack-Retry-Num`,
  same `event_id`), and Bolt does not dedupe. `DropRedeliveries` answers 200 and does
  nothing for an event id seen within the last hour.
- a replayed request: the same signed request (same `X-Slack-Signature`) sent again
  while its timestamp still passes the signature check (5 minutes either way). Slack
  never sends one signature twice, so a second one is somebody replaying a captured
  request; bot.slack.server answers it 200 with nothing done (`first_delivery`).

Only digests of the signature and event id are stored, never a request's content.

The database is asked with a deadline (`RequestMemoryWithFallback`): a database that is
locked or failing must not hold every request past Slack's 3 seconds, nor turn a click
into an error page when the listener has its own answer for that case (a decision keeps
its modal open with an inline error). After a miss it is left alone for a few seconds,
so a stalled database costs one deadline, not one per request. Each process also
remembers what it saw itself, so while the database cannot answer, a repeat reaching
the same process is still dropped (and one reaching another process would find the
database just as unable to record what it would do).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.errors import ApprovalsError
from bot.slack.signature import SIGNATURE_TOLERANCE_SECONDS

log = logging.getLogger(__name__)

EVENT_MEMORY_SECONDS = 3600.0  # Slack retries an event three times within minutes
DATABASE_DEADLINE_SECONDS = 0.5  # then this process's own memory answers ...
DATABASE_PAUSE_SECONDS = 5.0  # ... alone, for this long, before the database is asked again
LOCAL_ENTRIES = 10_000


class RequestMemory(Protocol):
    """What was received recently (the ApprovalService is one)."""

    async def remember_request(self, key: str, *, ttl_seconds: float) -> bool: ...


class LocalMemory:
    """What this process saw: a bounded, time-limited memory of keys."""

    def __init__(
        self, *, max_entries: int = LOCAL_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_entries <= 0:
            raise ValueError("max_entries must be positive")
        self._max = max_entries
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_time(self, key: str, *, ttl_seconds: float) -> bool:
        """True the first time `key` is seen within its TTL; remembers it."""
        now = self._clock()
        expires = self._seen.get(key)
        if expires is not None and expires > now:
            return False
        self._seen[key] = now + ttl_seconds
        self._seen.move_to_end(key)
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)
        self._forget_expired(now)
        return True

    def _forget_expired(self, now: float) -> None:
        """Drop the oldest keys whose time ran out (they would be seen as new anyway), so
        the memory holds what the last TTL brought, not `max_entries` whatever the rate:
        at the soak's 3 runs a second (9 requests) it kept growing for the 18 minutes it
        took to reach 10,000 (docs/production.md, "Faults and soak"). Keys are in the
        order they were last seen, and most share one TTL; the first still alive ends
        the sweep."""
        while self._seen:
            oldest, expires = next(iter(self._seen.items()))
            if expires > now:
                return
            del self._seen[oldest]

    def __len__(self) -> int:
        return len(self._seen)


class RequestMemoryWithFallback:
    """The database's request memory (every replica's), asked within a deadline, with
    this process's own memory beside it (see the module doc)."""

    def __init__(
        self,
        shared: RequestMemory,
        *,
        local: LocalMemory | None = None,
        deadline_seconds: float = DATABASE_DEADLINE_SECONDS,
        pause_seconds: float = DATABASE_PAUSE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._shared = shared
        self._local = local or LocalMemory(clock=clock)
        self._deadline = deadline_seconds
        self._pause = pause_seconds
        self._clock = clock
        self._paused_until: float | None = None

    async def remember_request(self, key: str, *, ttl_seconds: float) -> bool:
        first_here = self._local.first_time(key, ttl_seconds=ttl_seconds)
        if self._paused_until is not None and self._clock() < self._paused_until:
            return first_here
        try:
            async with asyncio.timeout(self._deadline):
                first = await self._shared.remember_request(key, ttl_seconds=ttl_seconds)
        except (ApprovalsError, TimeoutError) as error:
            if self._paused_until is None:
                log.warning(
                    "the database cannot say whether a request was seen before (%s); "
                    "this process's memory answers until it can",
                    str(error) or f"no answer within {self._deadline:g} s",
                )
            self._paused_until = self._clock() + self._pause
            return first_here
        if self._paused_until is not None:
            log.info("the database remembers requests again")
            self._paused_until = None
        return first and first_here


def _key(kind: str, value: str) -> str:
    return f"{kind}:{hashlib.sha256(value.encode('utf-8')).hexdigest()}"


async def first_delivery(
    memory: RequestMemory, *, signature: str, timestamp: str, now: float
) -> bool:
    """True the first time this signed request is seen; remembered until its timestamp
    can no longer pass the signature check (the caller verified it already)."""
    ttl = int(timestamp) + SIGNATURE_TOLERANCE_SECONDS - now + 1
    return await memory.remember_request(_key("signature", signature), ttl_seconds=max(ttl, 1))


class DropRedeliveries(AsyncMiddleware):
    """Slack redelivers an event it thinks we missed, with the same event_id: answer 200
    and do nothing the second time. (A class, not a function middleware, to skip Bolt's
    per-request argument injection on every request.)"""

    def __init__(self, memory: RequestMemory) -> None:
        self._memory = memory

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        body = req.body
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and event_id:
            first = await self._memory.remember_request(
                _key("event", event_id), ttl_seconds=EVENT_MEMORY_SECONDS
            )
            if not first:
                log.info("dropping redelivered event %s", event_id)
                return BoltResponse(status=200, body="")
        return await next()
