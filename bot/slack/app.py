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
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import (
    AlreadyDecidedError,
    ApprovalsError,
    InputError,
    NotAuthorizedError,
)
from bot.service import ApprovalService
from bot.service.outcomes import Busy, Closed, WaitingForApproval
from bot.service.tasks import TaskOwner
from bot.slack import blocks, payloads
from bot.slack.after_ack import defer
from bot.slack.dedupe import EventDeduplicator
from bot.slack.notifier import SlackNotifier
from store.api import ApprovalRecord

_log = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[None]]

AGENT_HELP = (
    "*/agent* starts an agent run in this channel; its review cards and answer arrive in "
    "the run's thread.\n"
    "• `/agent <task>`: the default agent, e.g. `/agent deploy payments 1.2.3`\n"
    "• `/agent @name <task>` or `/agent agent=name <task>`: another registered agent\n"
    "• `/agent help`: this message"
)
APPROVALS_HELP = (
    "*/approvals* shows approvals.\n"
    "• `/approvals list`: pending approvals you could decide\n"
    "• `/approvals help`: this message"
)
TRIGGER_EXPIRED_TEXT = (
    ":hourglass: Slack gave me too little time to open the form for that click. "
    "Press the button again."
)
UNEXPECTED_FAILURE_TEXT = (
    ":x: Something went wrong on our side while handling that (the bot's log has the "
    "details). Check the card or thread before trying again."
)
LIST_LIMIT = 20
AGENT_COMMAND = "/agent"
APPROVALS_COMMAND = "/approvals"
SLASH_COMMANDS = (AGENT_COMMAND, APPROVALS_COMMAND)


def warning(error: ApprovalsError) -> str:
    """One of our errors as a line for the person who acted (escaped: it may quote them)."""
    return f":warning: {blocks.escape(str(error), blocks.CONTEXT_TEXT_LIMIT)}"


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
    """The listeners, bound to the service, the notifier and the task owner."""

    def __init__(
        self,
        *,
        service: ApprovalService,
        notifier: SlackNotifier,
        tasks: TaskOwner,
        dedupe: EventDeduplicator,
    ) -> None:
        self._service = service
        self._notifier = notifier
        self._tasks = tasks
        self._dedupe = dedupe

    def register(self, app: AsyncApp) -> None:
        app.use(DropRedeliveries(self._dedupe))
        app.command(AGENT_COMMAND)(self.on_agent_command)
        app.command(APPROVALS_COMMAND)(self.on_approvals_command)
        app.action(payloads.APPROVE_ACTION_ID)(self.on_decision_button)
        app.action(payloads.REJECT_ACTION_ID)(self.on_decision_button)
        app.view(payloads.DECISION_CALLBACK_ID)(self.on_decision_submission)
        app.event("message")(self.on_message)
        app.event("app_home_opened")(self.on_app_home_opened)

    # -- slash commands ---------------------------------------------------------------

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
        self._later(
            self._start_run(command, parsed),
            name=f"slack:agent:{command.channel_id}",
            on_failure=lambda text: self._reply(command, text),
        )

    async def _start_run(self, command: payloads.SlashCommand, task: payloads.AgentTask) -> None:
        try:
            run = await self._service.start_run(
                agent_name=task.agent_name,
                task=task.task,
                requester=command.user_id,
                channel=command.channel_id,
            )
        except ApprovalsError as error:
            await self._reply(command, warning(error))
            return
        if run.thread_ts is None:
            await self._reply(command, blocks.cannot_post_text(command.channel_id))

    async def on_approvals_command(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            command = payloads.parse_slash_command(body)
            parsed = payloads.parse_approvals_command(command.text)
        except InputError as error:
            await ack(text=f"{warning(error)}\n\n{APPROVALS_HELP}")
            return
        if isinstance(parsed, payloads.ApprovalsHelp):
            await ack(text=APPROVALS_HELP)
            return
        await ack()
        self._later(
            self._list_pending(command),
            name="slack:approvals:list",
            on_failure=lambda text: self._reply(command, text),
        )

    async def _list_pending(self, command: payloads.SlashCommand) -> None:
        try:
            pending = await self._decidable_by(command.user_id)
        except ApprovalsError as error:
            await self._reply(command, warning(error))
            return
        await self._reply(command, blocks.pending_list_text(pending))

    # -- interactivity ----------------------------------------------------------------

    async def on_decision_button(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await ack()
        try:
            click = payloads.parse_button_click(body)
        except InputError as error:
            _log.warning("ignoring a malformed button click: %s", error)
            return
        self._later(
            self._open_decision_modal(click),
            name=f"slack:modal:{click.approval_id}",
            on_failure=lambda text: self._tell(click.channel_id, click.user_id, text),
        )

    async def _open_decision_modal(self, click: payloads.ButtonClick) -> None:
        context = payloads.ModalContext(
            approval_id=click.approval_id, action=click.action, channel_id=click.channel_id
        )
        view = blocks.decision_modal(context=context, call=click.call_text)
        try:
            outcome = await self._notifier.open_view(trigger_id=click.trigger_id, view=view)
        except ApprovalsError as error:
            await self._tell(click.channel_id, click.user_id, warning(error))
            return
        if outcome == "trigger_expired":
            await self._tell(click.channel_id, click.user_id, TRIGGER_EXPIRED_TEXT)

    async def on_decision_submission(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            parsed = payloads.parse_decision_submission(body)
        except InputError as error:
            _log.warning("ignoring a malformed view submission: %s", error)
            await ack()
            return
        if isinstance(parsed, payloads.InvalidSubmission):
            await ack(response_action="errors", errors=dict(parsed.errors))
            return
        await ack()
        self._later(
            self._decide(parsed),
            name=f"slack:decide:{parsed.approval_id}",
            on_failure=lambda text: self._tell(parsed.channel_id, parsed.user_id, text),
        )

    async def _decide(self, submission: payloads.DecisionSubmission) -> None:
        try:
            await self._service.decide(
                submission.approval_id,
                approve=submission.action == "approve",
                decider=submission.user_id,
                reason=submission.reason,
                message=submission.message,
            )
        except AlreadyDecidedError as error:
            text = blocks.already_decided_text(
                status=error.status, decider=error.decider, decided_at=error.decided_at
            )
            await self._tell(submission.channel_id, submission.user_id, text)
        except NotAuthorizedError as error:
            await self._tell(
                submission.channel_id, submission.user_id, f":no_entry: {blocks.escape(str(error))}"
            )
        except ApprovalsError as error:
            await self._tell(submission.channel_id, submission.user_id, warning(error))

    # -- events -----------------------------------------------------------------------

    async def on_message(self, event: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        bot_user_id = context.get("bot_user_id")
        reply = payloads.parse_thread_reply(
            event, bot_user_id=bot_user_id if isinstance(bot_user_id, str) else None
        )
        if reply is not None:
            self._later(
                self._follow_up(reply),
                name=f"slack:follow-up:{reply.thread_ts}",
                on_failure=lambda text: self._tell(
                    reply.channel_id, reply.user_id, text, reply.thread_ts
                ),
            )

    async def _follow_up(self, reply: payloads.ThreadReply) -> None:
        try:
            outcome = await self._service.follow_up(
                channel=reply.channel_id,
                thread_ts=reply.thread_ts,
                user=reply.user_id,
                text=reply.text,
            )
        except ApprovalsError as error:
            await self._tell(reply.channel_id, reply.user_id, warning(error), reply.thread_ts)
            return
        if isinstance(outcome, WaitingForApproval):
            text = blocks.waiting_for_approval_text(outcome.pending)
        elif isinstance(outcome, Busy):
            text = blocks.BUSY_TEXT
        elif isinstance(outcome, Closed):
            text = blocks.CLOSED_TEXT
        else:
            return
        await self._tell(reply.channel_id, reply.user_id, text, reply.thread_ts)

    async def on_app_home_opened(self, event: Mapping[str, Any]) -> None:
        user = event.get("user")
        if event.get("tab", "home") == "home" and isinstance(user, str):
            self._later(self._publish_home(user), name=f"slack:home:{user}")

    async def _publish_home(self, user: str) -> None:
        try:
            pending = await self._decidable_by(user)
            await self._notifier.publish_home(user=user, view=blocks.home_view(pending))
        except ApprovalsError as error:
            _log.warning("could not publish App Home for %s: %s", user, error)

    # -- plumbing ---------------------------------------------------------------------

    def _later(
        self,
        coro: Coroutine[Any, Any, None],
        *,
        name: str,
        on_failure: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """Run `coro` once Slack has been answered, in a task we own. Our own errors are
        handled inside; anything else (a bug) is logged and, with `on_failure`, the
        person who acted is told that their request failed rather than left waiting."""
        defer(self._tasks, self._guarded(coro, name, on_failure), name=name)

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

    async def _decidable_by(self, user: str) -> list[ApprovalRecord]:
        """Pending approvals `user` could decide. Until the policy issue lands the rule
        is the service's: anyone but the run's requester."""
        pending = await self._service.store.list_approvals(status="pending", limit=LIST_LIMIT * 5)
        return [approval for approval in pending if approval.requester != user][:LIST_LIMIT]

    async def _reply(self, command: payloads.SlashCommand, text: str) -> None:
        """Answer a slash command privately: through its response_url when it has one."""
        if command.response_url is None:
            await self._tell(command.channel_id, command.user_id, text)
            return
        try:
            await self._notifier.respond(response_url=command.response_url, text=text)
        except ApprovalsError as error:
            _log.warning("could not answer %s's %s: %s", command.user_id, command.command, error)

    async def _tell(
        self, channel: str | None, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """Tell one person something privately; a failure to tell is logged, not raised."""
        if channel is None:
            _log.info("no channel to tell %s: %s", user, text[:200])
            return
        try:
            await self._notifier.tell(channel=channel, user=user, text=text, thread_ts=thread_ts)
        except ApprovalsError as error:
            _log.warning("could not tell %s in %s: %s", user, channel, error)


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
