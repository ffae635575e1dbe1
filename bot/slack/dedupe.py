"""A bounded, time-limited memory of Slack event ids, to drop Slack's redeliveries.

Slack retries an event it thinks we missed (`X-Slack-Retry-Num`, same `event_id`); Bolt
does not dedupe. This cache is per process: across replicas the service's compare-and-set
and the ledger remain the last line of defence, so a duplicate that slips through still
changes nothing twice.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable


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
