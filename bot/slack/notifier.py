"""SlackNotifier: the service's Notifier, rendered as messages in the run's thread.

Also builds the Web API client: slack_sdk's AsyncWebClient on a session we own (closed
on shutdown), pointed at SLACK_API_URL, with slack_sdk's rate-limit retry handler so a
429 is retried after its Retry-After.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.errors import SlackError
from bot.runtime import PendingCall
from bot.service.api import (
    ApprovalDecided,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    CallUncertain,
    Event,
    ExecutionRefused,
    Location,
    RunFailed,
    RunFinished,
    RunStarted,
)
from bot.slack import blocks, cards, notices
from store.api import ApprovalRecord, RunRecord

RATE_LIMIT_RETRIES = 2
ViewOutcome = Literal["opened", "trigger_expired"]
_log = logging.getLogger(__name__)


def build_web_client(
    *, token: str, api_url: str, session: aiohttp.ClientSession, timeout: int = 10
) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        session=session,
        timeout=timeout,
        retry_handlers=_retry_handlers(),
    )


def _retry_handlers() -> list[AsyncRetryHandler]:
    """A lost connection is retried once; a 429 up to twice, after its Retry-After."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=1),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
    ]


class SlackNotifier:
    """Implements bot.service.Notifier with chat.postMessage / chat.update."""

    def __init__(self, client: AsyncWebClient, *, session: aiohttp.ClientSession) -> None:
        self._client = client
        self._session = session
        # A slash command's response_url comes from a signed payload, yet we only post to
        # Slack's hooks host, or to the host of the configured Web API (a local emulator).
        self._response_hosts = {"hooks.slack.com", urlsplit(client.base_url).netloc}

    @property
    def client(self) -> AsyncWebClient:
        """The Web API client (for other Slack readers, e.g. the group directory)."""
        return self._client

    async def notify(self, event: Event) -> Location | None:
        match event:
            case RunStarted(run=run, task=task):
                return await self._run_started(run, task)
            case ApprovalRequested(run=run, approval=approval):
                return await self._approval_requested(run, approval)
            case ApprovalDecided(run=run, approval=approval):
                await self._update_card(run, approval, voters=None)
            case ApprovalUpdated(run=run, view=view):
                await self._update_card(run, view.approval, voters=view.voters)
            case ApprovalReminder(run=run, approval=approval, approvers=approvers):
                await self._post_in_thread(run, notices.reminder_text(approval, approvers))
            case ApprovalExpired(run=run, approval=approval):
                await self._post_in_thread(run, notices.expired_text(approval))
            case ExecutionRefused(run=run, approval=approval, reason=reason):
                await self._execution_refused(run, approval, reason)
            case CallUncertain(run=run, call=call):
                await self._call_uncertain(run, call)
            case RunFinished(run=run, final_output=final_output, status=status):
                text = blocks.final_answer_text(final_output=final_output, status=status)
                await self._post_in_thread(run, text)
            case RunFailed(run=run, error=error):
                await self._post_in_thread(run, blocks.run_failed_text(error))
        return None

    async def _run_started(self, run: RunRecord, task: str) -> Location | None:
        if run.channel is None:
            return None
        text = blocks.run_root_text(agent_name=run.agent_name, requester=run.requester, task=task)
        ts = await self._post(
            channel=run.channel, text=text, blocks=blocks.run_root_blocks(run=run, task=task)
        )
        return (run.channel, ts)

    async def _approval_requested(
        self, run: RunRecord, approval: ApprovalRecord
    ) -> Location | None:
        if run.channel is None:
            return None
        ts = await self._post(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=cards.approval_card_text(approval),
            blocks=cards.approval_card_blocks(run=run, approval=approval, voters=()),
        )
        return (run.channel, ts)

    async def _execution_refused(
        self, run: RunRecord, approval: ApprovalRecord, reason: str
    ) -> None:
        await self._post_in_thread(run, notices.refused_text(approval, reason))
        if approval.status == "approved":  # other states already closed the card
            await self._update_card(run, approval, voters=None, not_run=reason)

    async def _call_uncertain(self, run: RunRecord, call: PendingCall) -> None:
        if run.channel is None:
            _log.info("run %s has no channel; call %s is uncertain", run.run_id, call.tool_call_id)
            return
        await self._post(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.uncertain_call_text(call),
            blocks=cards.uncertain_card_blocks(run=run, call=call),
        )

    # -- for the Slack layer's own answers --------------------------------------------

    async def tell(
        self, *, channel: str, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """An ephemeral message only `user` sees (why a click was refused, help, ...)."""
        await self._call(
            "chat_postEphemeral", channel=channel, user=user, text=text, thread_ts=thread_ts
        )

    async def respond(self, *, response_url: str, text: str) -> None:
        """Answer a slash command privately through its response_url (works where the bot
        is not a channel member, unlike chat.postEphemeral)."""
        if urlsplit(response_url).netloc not in self._response_hosts:
            raise SlackError(
                f"refusing to post to response_url host {urlsplit(response_url).netloc!r}"
            )
        webhook = AsyncWebhookClient(
            response_url, session=self._session, retry_handlers=_retry_handlers()
        )
        response = await webhook.send(text=text, response_type="ephemeral")
        if response.status_code != 200:
            raise SlackError(
                f"Slack response_url answered HTTP {response.status_code}: {response.body[:200]}"
            )

    async def open_view(self, *, trigger_id: str, view: dict[str, Any]) -> ViewOutcome:
        """Open a modal. Slack's trigger ids live 3 s: a late one is `trigger_expired`."""
        try:
            await self._call("views_open", trigger_id=trigger_id, view=view)
        except SlackError as error:
            if _api_error_code(error) in ("expired_trigger_id", "invalid_trigger_id"):
                return "trigger_expired"
            raise
        return "opened"

    async def publish_home(self, *, user: str, view: dict[str, Any]) -> None:
        await self._call("views_publish", user_id=user, view=view)

    # -- plumbing ---------------------------------------------------------------------

    async def _update_card(
        self,
        run: RunRecord,
        approval: ApprovalRecord,
        *,
        voters: Sequence[str] | None,
        not_run: str | None = None,
    ) -> None:
        if approval.slack_channel is None or approval.slack_ts is None:
            return
        await self._call(
            "chat_update",
            channel=approval.slack_channel,
            ts=approval.slack_ts,
            text=cards.approval_card_text(approval),
            blocks=cards.approval_card_blocks(
                run=run, approval=approval, voters=voters, not_run=not_run
            ),
        )

    async def _post_in_thread(self, run: RunRecord, text: str) -> None:
        if run.channel is None:
            _log.info("run %s has no channel; not posting: %s", run.run_id, text[:200])
            return
        await self._post(channel=run.channel, thread_ts=run.thread_ts, text=text)

    async def _post(self, *, channel: str, text: str, **extra: Any) -> str:
        response = await self._call("chat_postMessage", channel=channel, text=text, **extra)
        ts = response.get("ts")
        if not isinstance(ts, str):
            raise SlackError("chat.postMessage answered without a message ts")
        return ts

    async def _call(self, method: str, **arguments: Any) -> dict[str, Any]:
        arguments = {key: value for key, value in arguments.items() if value is not None}
        try:
            response = await getattr(self._client, method)(**arguments)
        except SlackApiError as error:
            code = error.response.get("error") if error.response is not None else None
            raise SlackError(f"Slack {method.replace('_', '.')} failed: {code or error}") from error
        data: dict[str, Any] = dict(response.data) if isinstance(response.data, dict) else {}
        return data


def _api_error_code(error: SlackError) -> str | None:
    cause = error.__cause__
    if isinstance(cause, SlackApiError) and cause.response is not None:
        code = cause.response.get("error")
        return code if isinstance(code, str) else None
    return None
