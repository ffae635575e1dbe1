"""What every listener group shares: run work after the ack in an owned task, and tell
one person something privately (ephemeral message or slash-command answer)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bot.errors import ApprovalsError
from bot.service import ApprovalService
from bot.service.tasks import TaskOwner
from bot.slack import blocks, payloads
from bot.slack.after_ack import defer
from bot.slack.notifier import SlackNotifier

_log = logging.getLogger("bot.slack.app")

Ack = Callable[..., Awaitable[None]]

UNEXPECTED_FAILURE_TEXT = (
    ":x: Something went wrong on our side while handling that (the bot's log has the "
    "details). Check the card or thread before trying again."
)


def warning(error: ApprovalsError) -> str:
    """One of our errors as a line for the person who acted (escaped: it may quote them)."""
    return f":warning: {blocks.escape(str(error), blocks.CONTEXT_TEXT_LIMIT)}"


def refusal(error: ApprovalsError) -> str:
    """A NotAuthorizedError as a line for the person refused."""
    return f":no_entry: {blocks.escape(str(error), blocks.CONTEXT_TEXT_LIMIT)}"


class Responder:
    """The service, the notifier and the task owner, with the helpers listeners share."""

    def __init__(
        self, *, service: ApprovalService, notifier: SlackNotifier, tasks: TaskOwner
    ) -> None:
        self.service = service
        self.notifier = notifier
        self.tasks = tasks

    def later(
        self,
        coro: Coroutine[Any, Any, None],
        *,
        name: str,
        on_failure: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """Run `coro` once Slack has been answered, in a task we own. Our own errors are
        handled inside; anything else (a bug) is logged and, with `on_failure`, the
        person who acted is told that their request failed rather than left waiting."""
        defer(self.tasks, self._guarded(coro, name, on_failure), name=name, owns=(coro,))

    async def _guarded(
        self,
        coro: Coroutine[Any, Any, None],
        name: str,
        on_failure: Callable[[str], Awaitable[None]] | None,
    ) -> None:
        try:
            await coro
        except Exception:
            _log.exception("Slack task %s failed", name)
            if on_failure is not None:
                await on_failure(UNEXPECTED_FAILURE_TEXT)

    async def reply(self, command: payloads.SlashCommand, text: str) -> None:
        """Answer a slash command privately: through its response_url when it has one."""
        if command.response_url is None:
            await self.tell(command.channel_id, command.user_id, text)
            return
        try:
            await self.notifier.respond(response_url=command.response_url, text=text)
        except ApprovalsError as error:
            _log.warning("could not answer %s's %s: %s", command.user_id, command.command, error)

    async def tell(
        self, channel: str | None, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """Tell one person something privately; a failure to tell is logged, not raised."""
        if channel is None:
            _log.info("no channel to tell %s: %s", user, text[:200])
            return
        try:
            await self.notifier.tell(channel=channel, user=user, text=text, thread_ts=thread_ts)
        except ApprovalsError as error:
            _log.warning("could not tell %s in %s: %s", user, channel, error)
