"""Memberships read from Slack, cached briefly: the one cache behind the channel and the
approver group directories (bot.slack.channels, bot.slack.groups).

The members of a key (a channel, a user group) are read once and kept for `ttl_seconds`,
so a burst of clicks costs one read, and someone removed loses the right within that
time. Concurrent lookups of one key share one read. A read that failed (None) is not
cached: the next lookup asks Slack again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

DEFAULT_TTL_SECONDS = 60.0
Monotonic = Callable[[], float]
Read = Callable[[str], Awaitable[frozenset[str] | None]]
"""Reads a key's members from Slack; None when Slack cannot tell (logged by the reader)."""


@dataclass(frozen=True, kw_only=True)
class _Cached:
    members: frozenset[str]
    fetched_at: float


class MembershipCache:
    """The members of each key, read by `read` at most once per `ttl_seconds`."""

    def __init__(self, read: Read, *, ttl_seconds: float, clock: Monotonic) -> None:
        self._read = read
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def members(self, key: str) -> frozenset[str] | None:
        """The key's members, cached; None when the read failed (not cached)."""
        cached = self._fresh(key)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # concurrent lookups of one key share one read
            cached = self._fresh(key)
            if cached is not None:
                return cached
            members = await self._read(key)
            if members is not None:
                self._cache[key] = _Cached(members=members, fetched_at=self._clock())
            return members

    def _fresh(self, key: str) -> frozenset[str] | None:
        cached = self._cache.get(key)
        if cached is None or self._clock() - cached.fetched_at >= self._ttl:
            return None
        return cached.members
