"""The Bolt AsyncApp and its listeners: they acknowledge at once and hand the work to
tasks.

Every listener parses its payload (pure parsers: bot.slack.commands, bot.slack.cards,
the modal modules), answers Slack's 3-second ack with only what it can know without I/O
(help text, inline validation errors; a decision's modal also waits for the decision's
commit, see bot.slack.interactions), and defers the slow part (the service, the
database, the model, other Web API calls) with `Responder.later`: it starts, in the
TaskOwner shared with the service and drained on shutdown, once the answer has been
written (bot.slack.after_ack). The app runs with `process_before_response=True`, so Bolt
answers as soon as the listener returns.

Here: `/agent` and replies in a run's thread (people start and continue runs),
`/approvals` and App Home (they read the service's read model, never the store). Card
buttons are in bot.slack.card_buttons, their modals' submissions in
bot.slack.interactions, bulk decisions from App Home in
bot.slack.bulk_interactions. Before any listener, a request from
outside the bot's workspace is refused (bot.slack.workspace) and a redelivered event
dropped (bot.slack.dedupe: remembered in the database, so across replicas).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import ApprovalsError, InputError
from bot.metrics import Metrics
from bot.service import (
    ApprovalService,
    Busy,
    Closed,
    Retrying,
    TaskOwner,
    WaitingForApproval,
)
from bot.slack import commands
from bot.slack.actions import ACTIONS
from bot.slack.admission import StartGate
from bot.slack.after_ack import Ack, Responder
from bot.slack.bulk_home import BULK_APPROVE_ACTION_ID, BULK_REJECT_ACTION_ID
from bot.slack.bulk_interactions import BulkInteractions
from bot.slack.bulk_modal import BULK_CALLBACK_ID
from bot.slack.card_buttons import CardButtons
from bot.slack.decision_modal import DECISION_CALLBACK_ID
from bot.slack.dedupe import DropRedeliveries, RequestMemory
from bot.slack.edit_modal import EDIT_CALLBACK_ID
from bot.slack.gateway import SlackGateway
from bot.slack.home import HomeListeners, publish_home
from bot.slack.interactions import CardInteractions
from bot.slack.messages import approval_lines, replies
from bot.slack.modals import optional_text
from bot.slack.observed import TimeAcks
from bot.slack.reading_modal import CONTINUE_ACTION_ID, NEXT_PAGE_ACTION_ID
from bot.slack.reconcile_modal import RECONCILE_CALLBACK_ID
from bot.slack.windows import END_WINDOW_ACTION_ID
from bot.slack.workspace import Foreign, PinToWorkspace, Workspace

log = logging.getLogger(__name__)

AGENT_COMMAND = "/agent"
APPROVALS_COMMAND = "/approvals"
MAX_LIST_PAGE = 50  # pages are walked by cursor; deeper than this, narrow it down


@dataclass(frozen=True, kw_only=True)
class ThreadReply:
    """A person's message inside a thread: possible follow-up input for a run."""

    channel_id: str
    thread_ts: str
    user_id: str
    text: str
    ts: str


def parse_thread_reply(event: Mapping[str, Any], *, bot_user_id: str | None) -> ThreadReply | None:
    """A human reply in a thread, or None for everything the bot ignores: bot
    messages, edits and other subtypes, its own messages, thread roots, top-level posts,
    and events without the fields a reply needs (answering those with an error would
    only make Slack redeliver them)."""
    if event.get("type") != "message" or event.get("subtype") or event.get("bot_id"):
        return None
    channel_id = optional_text(event, "channel")
    user_id = optional_text(event, "user")
    thread_ts = optional_text(event, "thread_ts")
    ts = optional_text(event, "ts")
    if channel_id is None or user_id is None or thread_ts is None or ts is None:
        return None
    if ts == thread_ts:
        return None
    if bot_user_id is not None and user_id == bot_user_id:
        return None
    text = str(event.get("text") or "").strip()
    if not text:
        return None
    return ThreadReply(
        channel_id=channel_id, thread_ts=thread_ts, user_id=user_id, text=text, ts=ts
    )


class SlackListeners:
    """Every listener, bound to the service, the Slack gateway and the task owner."""

    def __init__(
        self,
        *,
        service: ApprovalService,
        slack: SlackGateway,
        tasks: TaskOwner,
        workspace: Workspace,
        requests: RequestMemory,
        starts: StartGate | None = None,
    ) -> None:
        self._r = Responder(service=service, slack=slack, tasks=tasks)
        self._starts = starts or StartGate()
        self._requests = requests
        self._workspace = workspace
        self.cards = CardInteractions(self._r)
        self.buttons = CardButtons(self._r)
        self.home = HomeListeners(self._r)
        self.bulk = BulkInteractions(self._r)

    def register(self, app: AsyncApp) -> None:
        app.use(
            PinToWorkspace(
                self._workspace,
                allow_external_users=self._r.service.policy.allow_external_users,
                on_refused=self.on_foreign_request,
            )
        )
        app.use(DropRedeliveries(self._requests))
        # Bolt tries each listener's matcher in this order until one matches (tens of
        # microseconds each: Bolt builds the matcher's arguments every time), and none of
        # these overlap: the busiest come first (a decision's submission, a card's
        # buttons), so an Approve click or its submission matches at the first or second
        # try, not the third or the thirteenth.
        app.view(DECISION_CALLBACK_ID)(self.cards.on_decision_submission)
        for action in ACTIONS.values():
            app.action(action.action_id)(self.buttons.on_card_button)
        app.command(AGENT_COMMAND)(self.on_agent_command)
        app.command(APPROVALS_COMMAND)(self.on_approvals_command)
        app.action(NEXT_PAGE_ACTION_ID)(self.buttons.reading.on_next_page)
        app.action(CONTINUE_ACTION_ID)(self.buttons.reading.on_continue)
        app.view(EDIT_CALLBACK_ID)(self.cards.on_edit_submission)
        app.view(RECONCILE_CALLBACK_ID)(self.cards.on_reconcile_submission)
        app.action(BULK_APPROVE_ACTION_ID)(self.bulk.on_bulk_button)
        app.action(BULK_REJECT_ACTION_ID)(self.bulk.on_bulk_button)
        app.view(BULK_CALLBACK_ID)(self.bulk.on_bulk_submission)
        app.event("message")(self.on_message)
        app.event("app_home_opened")(self.on_app_home_opened)
        app.action(END_WINDOW_ACTION_ID)(self.home.on_end_click)

    # -- requests from outside the workspace -----------------------------------------

    def on_foreign_request(self, foreign: Foreign) -> None:
        """A refused request (Slack is answered by the middleware): audit it, and tell
        whoever clicked, after the answer."""
        self._r.later(partial(self._refuse_foreign, foreign), name=f"slack:refused:{foreign.kind}")

    async def _refuse_foreign(self, foreign: Foreign) -> None:
        await self._r.service.audit_refusal(
            actor=foreign.user,
            why="external",
            approval_id=foreign.approval_id,
            detail={"field": foreign.field, "value": foreign.value, "request": foreign.kind},
        )
        if foreign.kind == "block_actions" and foreign.user is not None:
            await self._r.tell(foreign.channel, foreign.user, replies.EXTERNAL_REFUSED_TEXT)

    # -- /agent -------------------------------------------------------------------------

    async def on_agent_command(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            command = commands.parse_slash_command(body)
            if command.text:  # too long: refused before it is parsed, and before any run
                self._r.service.check_task(command.text)
        except InputError as error:
            await ack(text=replies.warning(error))
            return
        try:
            parsed = commands.parse_agent_command(command.text)
        except InputError as error:
            await ack(text=f"{replies.warning(error)}\n\n{replies.AGENT_HELP}")
            return
        if isinstance(parsed, commands.AgentHelp):
            await ack(text=replies.AGENT_HELP)
            return
        admitted = self._starts.admit()
        if admitted is None:  # overloaded: say so now, create nothing (bot.slack.admission)
            await ack(text=replies.START_BUSY_TEXT)
            return
        try:
            await ack()
        except BaseException:
            admitted.drop()
            raise
        say = partial(self._r.reply, command)
        start = partial(_say_outcome, say, partial(self._start_run, command, parsed))
        self._r.later(
            partial(admitted.run, start),
            name=f"slack:agent:{command.channel_id}",
            on_failure=say,
            dropped=admitted.drop,
        )

    async def _start_run(
        self, command: commands.SlashCommand, task: commands.AgentTask
    ) -> str | None:
        run = await self._r.service.start_run(
            agent_name=task.agent_name,
            task=task.task,
            requester=command.user_id,
            channel=command.channel_id,
        )
        return replies.cannot_post_text(command.channel_id) if run.thread_ts is None else None

    # -- thread replies -----------------------------------------------------------------

    async def on_message(self, event: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        bot_user_id = context.get("bot_user_id")
        reply = parse_thread_reply(
            event, bot_user_id=bot_user_id if isinstance(bot_user_id, str) else None
        )
        if reply is not None:
            say = partial(self._r.tell, reply.channel_id, reply.user_id, thread_ts=reply.thread_ts)
            self._r.later(
                partial(_say_outcome, say, partial(self._follow_up, reply)),
                name=f"slack:follow-up:{reply.thread_ts}",
                on_failure=say,
            )

    async def _follow_up(self, reply: ThreadReply) -> str | None:
        outcome = await self._r.service.follow_up(
            channel=reply.channel_id,
            thread_ts=reply.thread_ts,
            user=reply.user_id,
            text=reply.text,
        )
        if isinstance(outcome, WaitingForApproval):
            return replies.waiting_for_approval_text(outcome.pending)
        if isinstance(outcome, Retrying):
            return replies.RETRYING_TEXT
        if isinstance(outcome, Busy):
            return replies.BUSY_TEXT
        if isinstance(outcome, Closed):
            return replies.CLOSED_TEXT
        return None

    # -- /approvals ---------------------------------------------------------------------

    async def on_approvals_command(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            command = commands.parse_slash_command(body)
            parsed = commands.parse_approvals_command(command.text)
            if isinstance(parsed, commands.ApprovalsList) and parsed.page > MAX_LIST_PAGE:
                raise InputError(f"the list goes up to page {MAX_LIST_PAGE}")
        except InputError as error:
            await ack(text=f"{replies.warning(error)}\n\n{replies.APPROVALS_HELP}")
            return
        if isinstance(parsed, commands.ApprovalsHelp):
            await ack(text=replies.APPROVALS_HELP)
            return
        await ack()
        self._r.later(
            partial(self._answer_approvals, command, parsed),
            name=f"slack:approvals:{type(parsed).__name__}",
            on_failure=partial(self._r.reply, command),
        )

    async def _answer_approvals(
        self, command: commands.SlashCommand, parsed: commands.ApprovalsCommand
    ) -> None:
        try:
            text = await self._approvals(command.user_id, parsed)
        except ApprovalsError as error:
            text = replies.refused_text(error)
        await self._r.reply(command, text)

    async def _approvals(self, user: str, parsed: commands.ApprovalsCommand) -> str:
        service = self._r.service
        if isinstance(parsed, commands.ApprovalsList):
            return await list_text(service, user, parsed.page)
        if isinstance(parsed, commands.ApprovalsShow):
            return approval_lines.show_text(
                await service.approval_view(parsed.approval_id, viewer=user)
            )
        if isinstance(parsed, commands.ApprovalsAudit):
            events = await service.approval_trail(parsed.approval_id, viewer=user)
            return approval_lines.audit_text(parsed.approval_id, events)
        if isinstance(parsed, commands.ApprovalsRevoke):
            reason = parsed.reason or replies.REVOKED_WITHOUT_REASON
            record = await service.revoke(parsed.approval_id, actor=user, reason=reason)
            return replies.revoked_text(record.approval_id)
        if isinstance(parsed, commands.ApprovalsReconcile):
            return await self._reconcile(user, parsed)
        if isinstance(parsed, commands.ApprovalsCancel):
            reason = parsed.reason or replies.CANCELLED_WITHOUT_REASON
            outcome = await service.cancel_run(parsed.run_id, actor=user, reason=reason)
            return replies.cancelled_text(outcome.run.run_id, len(outcome.closed))
        if isinstance(parsed, commands.ApprovalsAway):
            away = await service.set_away(user, until=parsed.until, stand_in=parsed.stand_in)
            return replies.away_text(away.until, away.stand_in)
        if isinstance(parsed, commands.ApprovalsBack):
            return replies.BACK_TEXT if await service.come_back(user) else replies.NOT_AWAY_TEXT
        raise InputError("unknown /approvals sub-command")

    async def _reconcile(self, user: str, parsed: commands.ApprovalsReconcile) -> str:
        """ID is the approval of the uncertain call (or, for a call that needed no
        approval, the run id: the run's only uncertain call)."""
        service = self._r.service
        try:
            view = await service.approval_view(parsed.approval_id, viewer=user)
            run_id, call = view.approval.run_id, view.approval.tool_call_id
        except InputError:
            run_id, call = parsed.approval_id, None
        try:
            await service.reconcile(
                run_id,
                actor=user,
                call=call,
                resolution=parsed.resolution,
                reason=f"/approvals reconcile by {user}",
            )
        except InputError as error:
            if call is None:
                raise InputError(
                    f"there is no approval or run with id {parsed.approval_id!r}"
                ) from error
            raise
        return replies.RECONCILED_TEXT

    # -- App Home -------------------------------------------------------------------------

    async def on_app_home_opened(self, event: Mapping[str, Any]) -> None:
        user = event.get("user")
        if event.get("tab", "home") == "home" and isinstance(user, str):
            self._r.later(partial(publish_home, self._r, user), name=f"slack:home:{user}")


async def list_text(service: ApprovalService, user: str, page: int) -> str:
    """The `/approvals list [page]` answer: pages are keyset pages, walked by cursor."""
    cursor: str | None = None
    size = approval_lines.LIST_PAGE_SIZE
    for _ in range(page - 1):
        skipped = await service.pending_for(user, limit=size, cursor=cursor)
        if skipped.next_cursor is None:
            return approval_lines.pending_list_text((), page=page, more=False)
        cursor = skipped.next_cursor
    found = await service.pending_for(user, limit=size, cursor=cursor)
    return approval_lines.pending_list_text(
        found.items, page=page, more=found.next_cursor is not None
    )


async def _say_outcome(
    say: Callable[[str], Awaitable[object]], work: Callable[[], Awaitable[str | None]]
) -> None:
    """Do `work` (the service call behind a command or a reply) and tell the person what
    it says, or why it was refused; nothing when all went as they expect."""
    try:
        text = await work()
    except ApprovalsError as error:
        text = replies.warning(error)
    if text is not None:
        await say(text)


def build_bolt_app(
    *,
    client: AsyncWebClient,
    signing_secret: str,
    listeners: SlackListeners | None = None,
    metrics: Metrics | None = None,
) -> AsyncApp:
    """A Bolt app that answers Slack only after the (fast) listener returned; with
    `metrics`, each request's time to its ack is observed (bot.slack.observed)."""
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        process_before_response=True,
        # Bolt's own check would 500 on a non-numeric timestamp; ours ran before Bolt
        # (bot.slack.server) and Socket Mode skips verification by design.
        request_verification_enabled=False,
    )
    if metrics is not None:
        app.use(TimeAcks(metrics))  # first: it times the other middlewares too
    if listeners is not None:
        listeners.register(app)
    return app
