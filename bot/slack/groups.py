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

import logging
import time

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.membership_cache import DEFAULT_TTL_SECONDS, MembershipCache, Monotonic

log = logging.getLogger(__name__)


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
        self._cache = MembershipCache(self._fetch, ttl_seconds=ttl_seconds, clock=clock)

    async def members(self, group_id: str) -> frozenset[str]:
        """The group's members (cached); empty, logged and not cached when Slack cannot
        tell us (an unknown group, an error, no answer)."""
        members = await self._cache.members(group_id)
        return frozenset() if members is None else members

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
