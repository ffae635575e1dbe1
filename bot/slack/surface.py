"""The Slack surface as one owned bundle: Web API client, notifier, tasks, Bolt app.

`SlackSurface.open` builds it around a service factory (the service needs the notifier,
which needs the client); `aclose` shuts down in dependency order: the shared TaskOwner drains
(Slack work after the ack and the service's resumes), the service closes (cancelling
what outlived the drain), then the store, then the HTTP session of the Web API client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiohttp
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.service import ApprovalService
from bot.service.tasks import TaskOwner
from bot.slack.app import SlackListeners, build_bolt_app
from bot.slack.dedupe import EventDeduplicator
from bot.slack.notifier import SlackNotifier, build_web_client
from store.api import Store

DRAIN_SECONDS = 30.0
_log = logging.getLogger(__name__)

ServiceFactory = Callable[[SlackNotifier, TaskOwner], ApprovalService]
"""Builds the service around our notifier and the one TaskOwner both layers share."""


@dataclass(kw_only=True)
class SlackSurface:
    session: aiohttp.ClientSession
    client: AsyncWebClient
    notifier: SlackNotifier
    tasks: TaskOwner
    service: ApprovalService
    store: Store
    bolt_app: AsyncApp
    also_close: Sequence[Callable[[], Awaitable[None]]] = field(default=())

    @classmethod
    async def open(
        cls,
        *,
        bot_token: str,
        signing_secret: str,
        api_url: str,
        store: Store,
        make_service: ServiceFactory,
        also_close: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> SlackSurface:
        """`also_close`: closers of what the service uses and the surface should close
        after it (the model's HTTP session, say), called in order."""
        session = aiohttp.ClientSession()
        try:
            client = build_web_client(token=bot_token, api_url=api_url, session=session)
            notifier = SlackNotifier(client, session=session)
            tasks = TaskOwner(logger=_log)
            service = make_service(notifier, tasks)  # may refuse its configuration
            listeners = SlackListeners(
                service=service, notifier=notifier, tasks=tasks, dedupe=EventDeduplicator()
            )
            bolt_app = build_bolt_app(
                client=client, signing_secret=signing_secret, listeners=listeners
            )
        except BaseException:
            await session.close()
            raise
        return cls(
            session=session,
            client=client,
            notifier=notifier,
            tasks=tasks,
            service=service,
            store=store,
            bolt_app=bolt_app,
            also_close=also_close,
        )

    async def aclose(self, *, drain_seconds: float = DRAIN_SECONDS) -> None:
        try:
            if not await self.tasks.drain(drain_seconds):
                _log.warning("tasks still running after %.0f s; cancelling", drain_seconds)
            await self.service.aclose(timeout=0.0)
        finally:
            try:
                await self.store.close()
            finally:
                try:
                    for close in self.also_close:
                        await close()
                finally:
                    await self.session.close()
