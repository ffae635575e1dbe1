"""Approver groups from Slack: `usergroups.users.list`, cached briefly.

The policy names approvers by user id (U…) and by user group id (S…); the service asks
this directory whether a person is in a group, when they decide and again right before
the tool runs. Membership is cached per group for `ttl_seconds` (default 60 s), so a
burst of clicks costs one Web API call, and someone removed from a group loses the right
to approve within that time. A Slack failure never crashes a decision: it is logged and
the person counts as not a member (fail closed), and nothing is cached, so the next
check asks Slack again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

DEFAULT_TTL_SECONDS = 60.0
log = logging.getLogger(__name__)

Monotonic = Callable[[], float]


@dataclass(frozen=True, kw_only=True)
class _Cached:
    members: frozenset[str]
    fetched_at: float


class SlackGroupDirectory:
    """Implements bot.policy.eligibility.GroupDirectory over the Slack Web API."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Monotonic = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def members(self, group_id: str) -> frozenset[str]:
        """The group's members (cached); empty, logged and not cached when Slack cannot
        tell us (an unknown group, an error, no answer)."""
        cached = self._fresh(group_id)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(group_id, asyncio.Lock())
        async with lock:  # concurrent checks of one group share one request
            cached = self._fresh(group_id)
            if cached is not None:
                return cached
            members = await self._fetch(group_id)
            if members is None:
                return frozenset()
            self._cache[group_id] = _Cached(members=members, fetched_at=self._clock())
            return members

    def _fresh(self, group_id: str) -> frozenset[str] | None:
        cached = self._cache.get(group_id)
        if cached is None or self._clock() - cached.fetched_at >= self._ttl:
            return None
        return cached.members

    async def _fetch(self, group_id: str) -> frozenset[str] | None:
        try:
            response = await self._client.usergroups_users_list(usergroup=group_id)
        except SlackApiError as error:
            code = error.response.get("error") if error.response is not None else None
            log.warning(
                "usergroups.users.list %s failed (%s): its members count as not members",
                group_id,
                code or error,
            )
            return None
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            log.warning(
                "usergroups.users.list %s unreachable (%s): its members count as not members",
                group_id,
                error,
            )
            return None
        users = response.get("users")
        if not isinstance(users, list) or not all(isinstance(user, str) for user in users):
            log.warning("usergroups.users.list %s answered without a user list", group_id)
            return None
        return frozenset(users)
