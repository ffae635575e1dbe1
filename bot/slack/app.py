"""The Bolt AsyncApp: listeners that acknowledge at once and hand the work to tasks.

Every listener parses its payload (bot.slack.payloads), answers Slack's 3-second ack
with only what it can know without I/O (help text, inline validation errors), and
defers the slow part (the service, the database, the model, other Web API calls) with
`bot.slack.after_ack.defer`: it starts, in the TaskOwner shared with the service and
drained on shutdown, once the answer has been written. The app runs with
`process_before_response=True`, so Bolt answers as soon as the listener returns.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import ApprovalsError, InputError
from bot.service import ApprovalService, Busy, Closed, WaitingForApproval
from bot.service.tasks import TaskOwner
from bot.slack import blocks, payloads
from bot.slack.approvals_listeners import ApprovalsListeners
from bot.slack.dedupe import EventDeduplicator
from bot.slack.edit_modal import EDIT_CALLBACK_ID
from bot.slack.interactions import CardInteractions
from bot.slack.notifier import SlackNotifier
from bot.slack.plumbing import Ack, Responder, warning
from bot.slack.reconcile_modal import RECONCILE_CALLBACK_ID

_log = logging.getLogger(__name__)

AGENT_HELP = (
    "*/agent* starts an agent run in this channel; its review cards and answer arrive in "
    "the run's thread.\n"
    "• `/agent <task>`: the default agent, e.g. `/agent deploy payments 1.2.3`\n"
    "• `/agent @name <task>` or `/agent agent=name <task>`: another registered agent\n"
    "• `/agent help`: this message"
)
AGENT_COMMAND = "/agent"
APPROVALS_COMMAND = "/approvals"
SLASH_COMMANDS = (AGENT_COMMAND, APPROVALS_COMMAND)


class DropRedeliveries(AsyncMiddleware):
    """Slack redelivers an event it thinks we missed, with the same event_id: answer 200
    and do nothing the second time. (A class, not a function middleware, to skip Bolt's
    per-request argument injection on every request.)"""

    def __init__(self, dedupe: EventDeduplicator) -> None:
        self._dedupe = dedupe

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        body = req.body
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and not self._dedupe.first_time(event_id):
            _log.info("dropping redelivered event %s", event_id)
            return BoltResponse(status=200, body="")
        return await next()


class SlackListeners:
    """Every listener, bound to the service, the notifier and the task owner: /agent and
    thread replies here, cards and modals in bot.slack.interactions, /approvals and App
    Home in bot.slack.approvals_listeners."""

    def __init__(
        self,
        *,
        service: ApprovalService,
        notifier: SlackNotifier,
        tasks: TaskOwner,
        dedupe: EventDeduplicator,
    ) -> None:
        self._r = Responder(service=service, notifier=notifier, tasks=tasks)
        self._dedupe = dedupe
        self.cards = CardInteractions(self._r)
        self.approvals = ApprovalsListeners(self._r)

    def register(self, app: AsyncApp) -> None:
        app.use(DropRedeliveries(self._dedupe))
        app.command(AGENT_COMMAND)(self.on_agent_command)
        app.command(APPROVALS_COMMAND)(self.approvals.on_command)
        for action_id in payloads.CARD_ACTIONS:
            app.action(action_id)(self.cards.on_card_button)
        app.view(payloads.DECISION_CALLBACK_ID)(self.cards.on_decision_submission)
        app.view(EDIT_CALLBACK_ID)(self.cards.on_edit_submission)
        app.view(RECONCILE_CALLBACK_ID)(self.cards.on_reconcile_submission)
        app.event("message")(self.on_message)
        app.event("app_home_opened")(self.approvals.on_app_home_opened)

    # -- /agent -------------------------------------------------------------------------

    async def on_agent_command(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            command = payloads.parse_slash_command(body)
            parsed = payloads.parse_agent_command(command.text)
        except InputError as error:
            await ack(text=f"{warning(error)}\n\n{AGENT_HELP}")
            return
        if isinstance(parsed, payloads.AgentHelp):
            await ack(text=AGENT_HELP)
            return
        await ack()
        say = partial(self._r.reply, command)
        self._r.later(
            _say_outcome(say, partial(self._start_run, command, parsed)),
            name=f"slack:agent:{command.channel_id}",
            on_failure=say,
        )

    async def _start_run(
        self, command: payloads.SlashCommand, task: payloads.AgentTask
    ) -> str | None:
        run = await self._r.service.start_run(
            agent_name=task.agent_name,
            task=task.task,
            requester=command.user_id,
            channel=command.channel_id,
        )
        return blocks.cannot_post_text(command.channel_id) if run.thread_ts is None else None

    # -- thread replies -----------------------------------------------------------------

    async def on_message(self, event: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        bot_user_id = context.get("bot_user_id")
        reply = payloads.parse_thread_reply(
            event, bot_user_id=bot_user_id if isinstance(bot_user_id, str) else None
        )
        if reply is not None:
            say = partial(self._r.tell, reply.channel_id, reply.user_id, thread_ts=reply.thread_ts)
            self._r.later(
                _say_outcome(say, partial(self._follow_up, reply)),
                name=f"slack:follow-up:{reply.thread_ts}",
                on_failure=say,
            )

    async def _follow_up(self, reply: payloads.ThreadReply) -> str | None:
        outcome = await self._r.service.follow_up(
            channel=reply.channel_id,
            thread_ts=reply.thread_ts,
            user=reply.user_id,
            text=reply.text,
        )
        if isinstance(outcome, WaitingForApproval):
            return blocks.waiting_for_approval_text(outcome.pending)
        if isinstance(outcome, Busy):
            return blocks.BUSY_TEXT
        if isinstance(outcome, Closed):
            return blocks.CLOSED_TEXT
        return None


async def _say_outcome(
    say: Callable[[str], Awaitable[None]], work: Callable[[], Awaitable[str | None]]
) -> None:
    """Do `work` (the service call behind a command or a reply) and tell the person what
    it says, or why it was refused; nothing when all went as they expect."""
    try:
        text = await work()
    except ApprovalsError as error:
        text = warning(error)
    if text is not None:
        await say(text)


def build_bolt_app(
    *,
    client: AsyncWebClient,
    signing_secret: str,
    listeners: SlackListeners | None = None,
) -> AsyncApp:
    """A Bolt app that answers Slack only after the (fast) listener returned."""
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        process_before_response=True,
        # Bolt's own check would 500 on a non-numeric timestamp; ours ran before Bolt
        # (bot.slack.server) and Socket Mode skips verification by design.
        request_verification_enabled=False,
    )
    if listeners is not None:
        listeners.register(app)
    return app
