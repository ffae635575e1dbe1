"""The App Home tab: what waits for the viewer (with the card's buttons, and how long
each has waited), several calls of one tool to decide at once (bot.slack.bulk_home),
what the viewer requested, recent decisions they may see (calls of their channels), and
the approval windows they may end (bot.slack.windows), whose End button is handled here.
Bounded: Block Kit allows 100 blocks per view, so each part shows a fixed number of rows
and says when there are more; the bulk part takes only the room the others leave.

A waiting call's buttons are its card's: Approve with changes only where the card offers
it (`card_amendable`: the call's engine, or its tool, lets approvers change arguments),
so Home never offers an edit the service would refuse.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from bot.errors import ApprovalsError, InputError
from bot.service import ApprovalService, ApprovalView, Page
from bot.service.bulk import BULK_LIMIT
from bot.slack.after_ack import Ack, Responder
from bot.slack.blocks import (
    SECTION_TEXT_LIMIT,
    Block,
    escape,
    escape_join,
    mrkdwn_context,
    mrkdwn_section,
    person,
    slack_date,
)
from bot.slack.bulk_home import bulk_home_blocks
from bot.slack.cards import card_amendable, card_buttons
from bot.slack.messages.approval_lines import (
    NOTHING_WAITS_TEXT,
    approval_line,
    decision_line,
    more_pending_text,
    quorum_line,
    waited_line,
)
from bot.slack.windows import (
    ENDED_FROM_HOME,
    HOME_WINDOWS_LIMIT,
    parse_end_click,
    window_blocks,
)
from store.records import ApprovalRecord, ApprovalWindow, RunRecord

log = logging.getLogger(__name__)

HOME_PENDING_LIMIT = 15  # 3 blocks each
HOME_PENDING_READ = 2 * BULK_LIMIT  # read for the bulk part; the first 15 shown one by one
TAIL_BLOCKS = 6  # "You requested" and "Recent decisions": divider, header, section each
HOME_REQUESTED_LIMIT = 10  # one line each, in one section
HOME_RECENT_LIMIT = 10
MAX_BLOCKS = 100  # Block Kit: blocks per home view


async def build_home(service: ApprovalService, user: str) -> dict[str, Any]:
    """The App Home view for `user` (three bounded reads of the service's read model)."""
    pending = await service.pending_for(user, limit=HOME_PENDING_READ)
    requested = await service.requested_by(user, limit=HOME_REQUESTED_LIMIT)
    recent = await service.recent_decisions(limit=HOME_RECENT_LIMIT, viewer=user)
    runs = await _runs_of(service, pending.items[:HOME_PENDING_LIMIT])
    windows = await service.approval_windows(user, limit=HOME_WINDOWS_LIMIT + 1)
    return home_view(
        pending=pending, requested=requested, recent=recent, runs=runs, windows=windows
    )


async def _runs_of(service: ApprovalService, views: Sequence[ApprovalView]) -> dict[str, RunRecord]:
    """The runs of `views`' calls, by run id (one read per run)."""
    runs: dict[str, RunRecord] = {}
    for run_id in dict.fromkeys(view.approval.run_id for view in views):
        run = await service.store.get_run(run_id)
        if run is not None:
            runs[run_id] = run
    return runs


async def publish_home(responder: Responder, user: str) -> None:
    """Build and publish `user`'s App Home; a failure is logged (Home is a convenience)."""
    try:
        view = await build_home(responder.service, user)
        await responder.slack.publish_home(user=user, view=view)
    except ApprovalsError as error:
        log.warning("could not publish App Home for %s: %s", user, error)


def home_view(
    *,
    pending: Page[ApprovalView],
    requested: Sequence[ApprovalView],
    recent: Sequence[ApprovalRecord],
    runs: Mapping[str, RunRecord] | None = None,
    windows: Sequence[ApprovalWindow] = (),
) -> dict[str, Any]:
    """The view; `runs` (by run id) are the pending calls' runs, which say whether a
    call's buttons include Approve with changes (a call whose run is not there has
    none); `windows`: the approval windows the viewer may end (after the rest, counted
    before the bulk part takes the room left)."""
    blocks: list[Block] = [_header("Waiting for you")]
    if not pending.items:
        blocks.append(mrkdwn_section(NOTHING_WAITS_TEXT))
    for view in pending.items[:HOME_PENDING_LIMIT]:
        run = (runs or {}).get(view.approval.run_id)
        blocks.extend(
            _pending_item(view, amendable=run is not None and card_amendable(run, view.approval)[0])
        )
    if pending.next_cursor is not None or len(pending.items) > HOME_PENDING_LIMIT:
        blocks.append(mrkdwn_context(more_pending_text()))
    ending = [{"type": "divider"}, *window_blocks(windows)] if windows else []
    room = MAX_BLOCKS - TAIL_BLOCKS - len(ending) - len(blocks)
    blocks += bulk_home_blocks(pending.items, room=room)
    blocks.append({"type": "divider"})
    blocks.append(_header("You requested"))
    lines = [approval_line(view.approval) for view in requested[:HOME_REQUESTED_LIMIT]]
    blocks.append(mrkdwn_section(escape_join(lines, SECTION_TEXT_LIMIT) or "Nothing yet."))
    blocks.append({"type": "divider"})
    blocks.append(_header("Recent decisions"))
    lines = [decision_line(record) for record in recent[:HOME_RECENT_LIMIT]]
    blocks.append(mrkdwn_section(escape_join(lines, SECTION_TEXT_LIMIT) or "None yet."))
    blocks += ending
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}


def _pending_item(view: ApprovalView, *, amendable: bool) -> list[Block]:
    approval = view.approval
    requester = f" for {person(approval.requester)}" if approval.requester else ""
    expiry = f" · expires {slack_date(approval.expires_at)}" if approval.expires_at else ""
    quorum = quorum_line(count=view.approvals_count, required=view.required, voters=view.voters)
    digest = escape(approval.arguments_digest[:16], 20)
    return [
        mrkdwn_section(f"{approval_line(approval)}{requester}"),
        mrkdwn_context(f"{quorum} · {waited_line(view)}{expiry} · digest `{digest}…`"),
        {"type": "actions", "elements": card_buttons(approval, amendable=amendable)},
    ]


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


class HomeListeners:
    """The End window button of App Home: the window ends through the service (the same
    rule as everywhere, audited) after Slack is answered, then the viewer's Home is
    published again; a refusal is told by direct message (a Home click has no channel)."""

    def __init__(self, responder: Responder) -> None:
        self._r = responder

    async def on_end_click(self, ack: Ack, body: Mapping[str, Any]) -> None:
        await ack()
        try:
            user, window_id = parse_end_click(body)
        except InputError as error:
            log.warning("ignoring a malformed End window click: %s", error)
            return
        self._r.later(partial(self._end, user, window_id), name=f"slack:window:{window_id}")

    async def _end(self, user: str, window_id: str) -> None:
        try:
            await self._r.service.end_window(window_id, actor=user, reason=ENDED_FROM_HOME)
        except ApprovalsError as error:
            text = f":no_entry: {escape(str(error), 2000)} Nothing changed."
            await self._r.slack.post(channel=await self._r.slack.open_dm(user=user), text=text)
        await publish_home(self._r, user)
