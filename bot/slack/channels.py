"""Channel membership from Slack: `conversations.members`, every page, cached briefly.

A call is shown to and decided by members of the channel it was asked in (the rule is
bot.service.authority's); the service asks this directory whether a person is a member,
for each list, modal, decision and once more right before the call runs. The members of
a channel are read page by page (`page_size` a page, Slack recommends at most 200) and
cached per channel for `ttl_seconds` (default 60 s), so a burst of clicks and an App Home
full of one channel's calls cost one read, and someone who leaves a private channel
loses the right within that time. A Slack failure never crashes a check: it is logged,
the person counts as not a member (fail closed), and nothing is cached, so the next check
asks Slack again. A channel larger than `max_pages` pages is cached as far as read, and
logged: people past it count as not members.

Scopes: channels:read, groups:read, mpim:read (public and private channels, group DMs;
a DM with the bot is scoped by the policy alone and never asked about).
"""

from __future__ import annotations

import logging
import time

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.membership_cache import DEFAULT_TTL_SECONDS, MembershipCache, Monotonic

PAGE_SIZE = 200
MAX_PAGES = 100
log = logging.getLogger(__name__)


class SlackChannelDirectory:
    """Implements bot.policy.eligibility.ChannelDirectory over the Slack Web API."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Monotonic = time.monotonic,
        page_size: int = PAGE_SIZE,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self._client = client
        self._page_size = page_size
        self._max_pages = max_pages
        self._cache = MembershipCache(self._fetch, ttl_seconds=ttl_seconds, clock=clock)

    async def is_member(self, channel_id: str, user: str) -> bool:
        """Is `user` in the channel (cached)? No when Slack cannot tell (logged)."""
        members = await self._cache.members(channel_id)
        return members is not None and user in members

    async def _fetch(self, channel_id: str) -> frozenset[str] | None:
        members: set[str] = set()
        cursor: str | None = None
        for _ in range(self._max_pages):
            page = await self._page(channel_id, cursor)
            if page is None:
                return None
            found, cursor = page
            members.update(found)
            if not cursor:
                return frozenset(members)
        log.warning(
            "conversations.members %s has more than %d pages: members past them count as "
            "not members",
            channel_id,
            self._max_pages,
        )
        return frozenset(members)

    async def _page(self, channel_id: str, cursor: str | None) -> tuple[list[str], str] | None:
        """One page of members and the next cursor ("" at the end); None on a failure."""
        try:
            response = await self._client.conversations_members(
                channel=channel_id, limit=self._page_size, cursor=cursor
            )
        except SlackApiError as error:
            code = error.response.get("error") if error.response is not None else None
            log.warning(
                "conversations.members %s failed (%s): nobody counts as a member",
                channel_id,
                code or error,
            )
            return None
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            log.warning(
                "conversations.members %s unreachable (%s): nobody counts as a member",
                channel_id,
                error,
            )
            return None
        users = response.get("members")
        metadata = response.get("response_metadata") or {}
        next_cursor = metadata.get("next_cursor") if isinstance(metadata, dict) else None
        if not isinstance(users, list) or not all(isinstance(user, str) for user in users):
            log.warning("conversations.members %s answered without a member list", channel_id)
            return None
        return users, next_cursor if isinstance(next_cursor, str) else ""
