"""Slack's redeliveries, dropped: a bounded, time-limited memory of event ids, and the
Bolt middleware that answers a redelivered event without handling it again.

Slack retries an event it thinks we missed (`X-Slack-Retry-Num`, same `event_id`); Bolt
does not dedupe. This cache is per process: across replicas the service's compare-and-set
and the ledger remain the last line of defence, so a duplicate that slips through still
changes nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

log = logging.getLogger(__name__)


class EventDeduplicator:
    def __init__(
        self,
        *,
        ttl_seconds: float = 3600.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_seconds <= 0 or max_entries <= 0:
            raise ValueError("ttl_seconds and max_entries must be positive")
        self._ttl = ttl_seconds
        self._max = max_entries
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def first_time(self, key: str) -> bool:
        """True the first time `key` is seen within the TTL; remembers it."""
        now = self._clock()
        self._forget_expired(now)
        if key in self._seen:
            return False
        self._seen[key] = now + self._ttl
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._seen)

    def _forget_expired(self, now: float) -> None:
        while self._seen:
            key, expires = next(iter(self._seen.items()))
            if expires > now:
                return
            del self._seen[key]


class DropRedeliveries(AsyncMiddleware):
    """Slack redelivers an event it thinks we missed, with the same event_id: answer 200
    and do nothing the second time. (A class, not a function middleware, to skip Bolt's
    per-request argument injection on every request.)"""

    def __init__(self, dedupe: EventDeduplicator) -> None:
        self._dedupe = dedupe

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        body = req.body
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and not self._dedupe.first_time(event_id):
            log.info("dropping redelivered event %s", event_id)
            return BoltResponse(status=200, body="")
        return await next()
