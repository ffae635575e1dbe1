"""`/approvals …` and the App Home tab, read and acted on through the service's read
model (never the store): what waits for a person, one approval, its trail, revoke and
reconcile."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from bot.errors import ApprovalsError, InputError
from bot.service import ApprovalService
from bot.slack import payloads
from bot.slack.approvals_command import (
    ApprovalsAudit,
    ApprovalsCommand,
    ApprovalsHelp,
    ApprovalsList,
    ApprovalsReconcile,
    ApprovalsRevoke,
    ApprovalsShow,
    parse_approvals_command,
)
from bot.slack.approvals_replies import APPROVALS_HELP, audit_text, pending_list_text, show_text
from bot.slack.blocks import escape
from bot.slack.home import publish_home
from bot.slack.interactions import refused_text
from bot.slack.plumbing import Ack, Responder, warning

_log = logging.getLogger("bot.slack.app")

LIST_PAGE_SIZE = 20
MAX_LIST_PAGE = 50  # pages are walked by cursor; deeper than this, narrow it down
NO_REASON = "(revoked with /approvals; no reason given)"


class ApprovalsListeners:
    def __init__(self, responder: Responder) -> None:
        self._r = responder

    async def on_command(self, ack: Ack, body: Mapping[str, Any]) -> None:
        try:
            command = payloads.parse_slash_command(body)
            parsed = parse_approvals_command(command.text)
            if isinstance(parsed, ApprovalsList) and parsed.page > MAX_LIST_PAGE:
                raise InputError(f"the list goes up to page {MAX_LIST_PAGE}")
        except InputError as error:
            await ack(text=f"{warning(error)}\n\n{APPROVALS_HELP}")
            return
        if isinstance(parsed, ApprovalsHelp):
            await ack(text=APPROVALS_HELP)
            return
        await ack()
        self._r.later(
            self._answer(command, parsed),
            name=f"slack:approvals:{type(parsed).__name__}",
            on_failure=lambda text: self._r.reply(command, text),
        )

    async def _answer(self, command: payloads.SlashCommand, parsed: ApprovalsCommand) -> None:
        try:
            text = await self._run(command.user_id, parsed)
        except ApprovalsError as error:
            text = refused_text(error)
        await self._r.reply(command, text)

    async def _run(self, user: str, parsed: ApprovalsCommand) -> str:
        service = self._r.service
        if isinstance(parsed, ApprovalsList):
            return await self._list(user, parsed.page)
        if isinstance(parsed, ApprovalsShow):
            return show_text(await service.approval_view(parsed.approval_id, viewer=user))
        if isinstance(parsed, ApprovalsAudit):
            events = await service.approval_trail(parsed.approval_id, viewer=user)
            return audit_text(parsed.approval_id, events)
        if isinstance(parsed, ApprovalsRevoke):
            record = await service.revoke(
                parsed.approval_id, actor=user, reason=parsed.reason or NO_REASON
            )
            revoked = escape(record.approval_id, 100)
            return f":leftwards_arrow_with_hook: Revoked `{revoked}`; it will not run."
        if isinstance(parsed, ApprovalsReconcile):
            return await self._reconcile(user, parsed)
        raise InputError("unknown /approvals sub-command")

    async def _list(self, user: str, page: int) -> str:
        return await list_text(self._r.service, user, page)

    async def _reconcile(self, user: str, parsed: ApprovalsReconcile) -> str:
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
        return ":white_check_mark: Reconciled; the run goes on."

    # -- App Home -------------------------------------------------------------------------

    async def on_app_home_opened(self, event: Mapping[str, Any]) -> None:
        user = event.get("user")
        if event.get("tab", "home") == "home" and isinstance(user, str):
            self._r.later(self.publish_home(user), name=f"slack:home:{user}")

    async def publish_home(self, user: str) -> None:
        await publish_home(self._r, user)


async def list_text(service: ApprovalService, user: str, page: int) -> str:
    """The `/approvals list [page]` answer: pages are keyset pages, walked by cursor."""
    cursor: str | None = None
    for _ in range(page - 1):
        skipped = await service.pending_for(user, limit=LIST_PAGE_SIZE, cursor=cursor)
        if skipped.next_cursor is None:
            return pending_list_text((), page=page, more=False)
        cursor = skipped.next_cursor
    found = await service.pending_for(user, limit=LIST_PAGE_SIZE, cursor=cursor)
    return pending_list_text(found.items, page=page, more=found.next_cursor is not None)
