"""The Slack surface as one owned bundle: the Web API session, the tasks, the service,
the Bolt app.

`SlackSurface.open` builds it around a service factory (the service needs the Slack
gateway for its notifier and group directory, the gateway needs the session). Opening
it asks Slack who the bot is (`auth.test`): requests from another workspace,
organisation or app are refused from then on (bot.slack.workspace); a token Slack does
not accept stops start-up. It also installs log redaction for the process (bot.logs):
no log line the bot, Bolt or slack_sdk writes holds a credential. The
surface closes what it opened, in reverse: the shared TaskOwner drains (Slack work after
the ack and the service's resumes), the service closes (cancelling what outlived the
drain), then the HTTP session. What the caller opened and handed in (the store the
factory captures, the model) the caller closes, after the surface.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from types import TracebackType

from slack_bolt.app.async_app import AsyncApp

from bot.errors import ConfigError, SlackError
from bot.logs import install_log_redaction
from bot.metrics import Metrics
from bot.service import ApprovalService, TaskOwner
from bot.slack.admission import StartGate
from bot.slack.app import SlackListeners, build_bolt_app
from bot.slack.dedupe import RequestMemory, RequestMemoryWithFallback
from bot.slack.gateway import SlackGateway, api_error_code, web_api_session
from bot.slack.observed import SlackHealth
from bot.slack.workspace import Workspace, workspace_from_auth_test

DRAIN_SECONDS = 30.0


@dataclass(frozen=True, kw_only=True)
class AuthRetry:
    """How start-up waits for an unreachable Slack: doubling from `first_delay` to
    `max_delay` seconds, for as long as it takes (the process is stopped by a signal)."""

    first_delay: float = 1.0
    max_delay: float = 30.0
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep

    def delay(self, failures: int) -> float:
        return min(self.max_delay, self.first_delay * 2.0 ** (failures - 1))


log = logging.getLogger(__name__)

ServiceFactory = Callable[[SlackGateway, TaskOwner], ApprovalService]
"""Builds the service around the Slack gateway and the one TaskOwner both layers share."""


class SlackSurface:
    def __init__(
        self,
        *,
        slack: SlackGateway,
        tasks: TaskOwner,
        service: ApprovalService,
        bolt_app: AsyncApp,
        workspace: Workspace,
        requests: RequestMemory,
        closing: contextlib.AsyncExitStack,
        health: SlackHealth | None = None,
    ) -> None:
        self.slack = slack
        self.tasks = tasks
        self.service = service
        self.bolt_app = bolt_app
        self.workspace = workspace
        self.requests = requests  # what Slack sent recently (bot.slack.dedupe)
        self.health = health or SlackHealth()  # the last Web API answer (for /readyz)
        self._closing = closing

    @classmethod
    async def open(
        cls,
        *,
        bot_token: str,
        signing_secret: str,
        api_url: str,
        make_service: ServiceFactory,
        metrics: Metrics | None = None,
        auth_retry: AuthRetry = AuthRetry(),
        waiting: Callable[[str], None] | None = None,
        starts: StartGate | None = None,
    ) -> SlackSurface:
        """Open the surface (the module doc); while Slack cannot be reached, `waiting`
        hears why before each wait (what /readyz says meanwhile); `starts` bounds the
        runs being started (bot.slack.admission; None: its defaults)."""
        install_log_redaction()
        health = SlackHealth()
        async with contextlib.AsyncExitStack() as stack:  # unwinds only if opening fails
            session = await stack.enter_async_context(web_api_session())
            slack = SlackGateway.open(
                token=bot_token, api_url=api_url, session=session, metrics=metrics, health=health
            )
            tasks = TaskOwner(logger=log)
            service = make_service(slack, tasks)  # may refuse its configuration
            stack.push_async_callback(partial(service.aclose, timeout=0.0))
            workspace = await _own_workspace(slack, auth_retry, waiting or _nobody)
            requests = RequestMemoryWithFallback(service)
            listeners = SlackListeners(
                service=service,
                slack=slack,
                tasks=tasks,
                workspace=workspace,
                requests=requests,
                starts=starts,
            )
            bolt_app = build_bolt_app(
                client=slack.client,
                signing_secret=signing_secret,
                listeners=listeners,
                metrics=metrics,
            )
            closing = stack.pop_all()
        return cls(
            slack=slack,
            tasks=tasks,
            service=service,
            bolt_app=bolt_app,
            workspace=workspace,
            requests=requests,
            closing=closing,
            health=health,
        )

    async def aclose(self, *, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Drain the tasks for `drain_seconds`, close the service (cancelling what is
        left), then the HTTP session."""
        try:
            if not await self.tasks.drain(drain_seconds):
                log.warning("tasks still running after %.0f s; cancelling", drain_seconds)
        finally:
            await self._closing.aclose()

    async def __aenter__(self) -> SlackSurface:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _nobody(reason: str) -> None:
    """No one to tell while waiting for Slack (the log line says it)."""


async def _own_workspace(
    slack: SlackGateway, retry: AuthRetry, waiting: Callable[[str], None]
) -> Workspace:
    """The bot's workspace by auth.test. A token Slack refuses is a ConfigError in one
    line; an unreachable Slack (or a 5xx) is tried again with backoff, one WARNING line a
    try, and `waiting` is told why."""
    failures = 0
    while True:
        try:
            answer = await slack.auth_test()
            break
        except SlackError as error:
            code = api_error_code(error)
            if code is not None:
                raise ConfigError(f"SLACK_BOT_TOKEN rejected by Slack: {code}") from None
            failures += 1
            delay = retry.delay(failures)
            log.warning("%s; Slack unreachable, trying again in %.0f s (try %d)",
                        error, delay, failures + 1)  # fmt: skip
            waiting(f"waiting for Slack: {error}; trying again in {delay:.0f} s")
            await retry.sleep(delay)
    workspace = workspace_from_auth_test(answer)
    log.info(
        "serving Slack team %s (org %s, app %s)",
        workspace.team_id or "(org-wide)",
        workspace.enterprise_id or "none",
        workspace.app_id or "not named",
    )
    if workspace.app_id is None:
        log.warning("auth.test did not name the app: requests are not checked for it")
    return workspace
