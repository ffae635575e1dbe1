"""After the acknowledgement: a listener's slow part, and how it answers the person.

Every request is acknowledged at once; the slow part (the service, the database, the
model, other Web API calls) must not delay the HTTP answer. (One exception: a decision's
modal is answered only once the decision is committed, within a budget; what follows
the commit is deferred like the rest. See bot.slack.interactions.) Spawning it as a task right
away is not enough: the task's synchronous start (building a Web API request, say)
would run in the next loop iteration, before aiohttp has written the answer. So over
HTTP the server opens a collector for the request (`collecting`), listeners `defer`
their work into it as a zero-argument coroutine function, and the server starts the
collected work in the TaskOwner right after the response is written (or drops it, never
started, when the request failed first). Without a collector (Socket Mode, direct
calls) `defer` starts the work at once.

The work starts as soon as the answer is out, with no priority for later acks. A lane
that ran it a few items at a time (anything waiting 0.75 s started anyway) was measured
with bench/ack.py and taken out: it helped only bursts shorter than its wait (the work
spilled past the burst), gave nothing under sustained load (the loop must do all the
work either way) and pushed views.open to 2.9 s after the click at c=64, against 1.5 s
without it: too close to Slack's 3-second trigger_id window.

`Responder` is what listeners share to do this: the service, the Slack gateway, work
after the ack (`later`, which tells the person when a bug ended it) and private answers
(`tell`, `reply`), whose failures are logged rather than raised.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bot.errors import ApprovalsError
from bot.service import ApprovalService, TaskOwner
from bot.slack.commands import SlashCommand
from bot.slack.gateway import SlackGateway
from bot.slack.messages.replies import UNEXPECTED_FAILURE_TEXT

log = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[None]]
Work = Callable[[], Coroutine[Any, Any, object]]
"""Deferred work: a zero-argument coroutine function, called only when the work starts
(work that never starts creates no coroutine, so none is left un-awaited)."""


@dataclass(frozen=True, kw_only=True)
class _Deferred:
    tasks: TaskOwner
    work: Work
    name: str
    dropped: Callable[[], None] | None = None


_collector: contextvars.ContextVar[list[_Deferred] | None] = contextvars.ContextVar(
    "slack_after_ack", default=None
)


def defer(
    tasks: TaskOwner, work: Work, *, name: str, dropped: Callable[[], None] | None = None
) -> None:
    """Run `work()` in a task owned by `tasks` once the current request is answered;
    `dropped()` is called instead when the request fails first and the work never starts
    (a place it held is given back: bot.slack.admission)."""
    pending = _collector.get()
    if pending is None:
        tasks.spawn(work(), name=name)
    else:
        pending.append(_Deferred(tasks=tasks, work=work, name=name, dropped=dropped))


class AfterAck:
    """The work deferred while one request was handled."""

    def __init__(self) -> None:
        self._pending: list[_Deferred] = []

    def start(self) -> None:
        """Start the collected work (call after the response was written)."""
        pending, self._pending = self._pending, []
        for item in pending:
            item.tasks.spawn(item.work(), name=item.name)

    def discard(self) -> None:
        """Drop work that will never start (the request failed before its answer)."""
        pending = list(self._pending)
        self._pending.clear()
        for item in pending:
            if item.dropped is not None:
                item.dropped()


@contextmanager
def collecting() -> Iterator[AfterAck]:
    """Collect `defer`red work inside the block; the caller starts or discards it."""
    after = AfterAck()
    token = _collector.set(after._pending)
    try:
        yield after
    finally:
        _collector.reset(token)


class Responder:
    """The service, the Slack gateway and the task owner, with the helpers listeners share."""

    def __init__(self, *, service: ApprovalService, slack: SlackGateway, tasks: TaskOwner) -> None:
        self.service = service
        self.slack = slack
        self.tasks = tasks

    def later(
        self,
        work: Callable[[], Awaitable[None]],
        *,
        name: str,
        on_failure: Callable[[str], Awaitable[object]] | None = None,
        dropped: Callable[[], None] | None = None,
    ) -> None:
        """Run `work()` once Slack has been answered, in a task we own. Our own errors are
        handled inside; anything else (a bug) is logged and, with `on_failure`, the
        person who acted is told that their request failed rather than left waiting.
        `dropped()`: called instead when the work never starts (see `defer`)."""

        async def guarded() -> None:
            try:
                await work()
            except ApprovalsError as error:  # Slack refused a reply, say: one line
                log.warning("Slack task %s failed: %s", name, error)
                if on_failure is not None:
                    await on_failure(UNEXPECTED_FAILURE_TEXT)
            except Exception:
                log.exception("Slack task %s failed", name)
                if on_failure is not None:
                    await on_failure(UNEXPECTED_FAILURE_TEXT)

        defer(self.tasks, guarded, name=name, dropped=dropped)

    async def reply(self, command: SlashCommand, text: str) -> None:
        """Answer a slash command privately: through its response_url when it has one."""
        if command.response_url is None:
            await self.tell(command.channel_id, command.user_id, text)
            return
        await self.respond(command.response_url, command.user_id, text)

    async def tell(
        self,
        channel: str | None,
        user: str,
        text: str,
        thread_ts: str | None = None,
        *,
        blocks: list[Any] | None = None,
    ) -> bool:
        """Tell one person something privately (`blocks`: with buttons); whether Slack
        took it. A failure to tell is logged, not raised (Slack refuses an ephemeral
        message to someone who is not a member of the channel: `user_not_in_channel`)."""
        if channel is None:
            log.info("no channel to tell %s: %s", user, text[:200])
            return False
        try:
            await self.slack.tell(
                channel=channel, user=user, text=text, thread_ts=thread_ts, blocks=blocks
            )
        except ApprovalsError as error:
            log.warning("could not tell %s in %s: %s", user, channel, error)
            return False
        return True

    async def respond(self, response_url: str | None, user: str, text: str) -> bool:
        """Tell the person through the response_url of what they did (a click, a slash
        command), which reaches them whether or not they are a member of its channel;
        whether Slack took it."""
        if response_url is None:
            return False
        try:
            await self.slack.respond(response_url=response_url, text=text)
        except ApprovalsError as error:
            log.warning("could not answer %s through the response_url: %s", user, error)
            return False
        return True
