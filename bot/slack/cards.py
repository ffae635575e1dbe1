"""Review cards: build them in every state, and read back a click on their buttons.

A pending card shows "N of M approvals" and who gave them, with Approve, Approve with
changes, Reject and Revoke (each button's value is the approval id only); when its
arguments are too long for the card it says they are cut and adds Read all arguments
(an approval counts only from someone who has read them whole, bot.service.reading). An approved
card keeps Revoke until the call runs, or until the last check before it ran refused
it (the card then says why it was not run); rejected, expired and revoked cards have no
buttons and say who, when and why. An uncertain call's card has Record result, Retry and
Abort, whose value names the run and the call (`run_id:execution_key`).

The buttons are the rows of bot.slack.actions; what a card says is
bot.slack.messages.approval_lines. Pure builders and parsers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot
from bot.review.visible import visible
from bot.service import UncertainCall
from bot.service.events import CardReach
from bot.service.reading import CUT_MARK, card_shows_all
from bot.slack.actions import BY_ACTION_ID, CardAction, button
from bot.slack.blocks import (
    CALL_BLOCK_ID,
    Block,
    escape,
    mrkdwn_context,
    mrkdwn_section,
    snapshot_text,
)
from bot.slack.messages.approval_lines import (
    TOOL_NOT_AMENDABLE_TEXT,
    card_about,
    card_title,
    closing_line,
    not_amendable_text,
    not_run_line,
    quorum_line,
    reach_lines,
    standing_line,
    uncertain_about_text,
    uncertain_call_text,
    window_line,
)
from bot.slack.messages.forms import CUT_CARD_TEXT
from bot.slack.modals import check_approval_id, mapping_field, optional_text, submitter, text_field
from store.records import ApprovalRecord, ApprovalWindow, RunRecord, StandingDecision

RESULT_LIMIT = 2800  # characters of an audit-only call's result on its card
AUDITED_TEXT = (
    'The policy makes this tool audit-only (`mode = "audit"`): its calls run without '
    "waiting for anyone, and each is recorded on a card like this one and in the audit log."
)


def approval_card_blocks(
    *,
    run: RunRecord,
    approval: ApprovalRecord,
    voters: Sequence[str] | None,
    not_run: str | None = None,
    standing: Sequence[StandingDecision] = (),
    reach: CardReach | None = None,
    deciding: bool = True,
    note: str | None = None,
    window: ApprovalWindow | None = None,
) -> list[Block]:
    """The card for an approval in any state, from its record and the voters on its
    current digest (None: not known here, the quorum line is left out). `not_run` is why
    an approved call was stopped right before it ran: said on the card, no buttons.
    `standing`: the run's active standing decisions; the card that made one says it
    stands, a pending card names those of its run. Approve with changes is offered as
    `card_amendable` says (else the card says why not). `reach`: where the card went (by
    direct message, escalated). `deciding`: whether a pending card carries Approve,
    Approve with changes and Reject (not the thread's card when the policy sends them by
    direct message); `note`: a line under the title (a copy in someone's DMs says why it
    came to them). `window`: the approval window the approval opened, or that approved
    it (said on the card: whose, until when)."""
    status = approval.status
    blocks: list[Block] = [mrkdwn_section(card_title(approval))]
    if note is not None:
        blocks.append(mrkdwn_context(note))
    blocks.append(mrkdwn_context(card_about(run, approval)))
    if voters is not None:
        line = quorum_line(count=len(voters), required=approval.required_approvals, voters=voters)
        blocks.append(mrkdwn_context(line))
    call = snapshot_text(approval)
    blocks.append(mrkdwn_section(call, block_id=CALL_BLOCK_ID))
    # No cut mark, no cut; with one (cut, or a value quoting it) the rule decides.
    cut = status == "pending" and CUT_MARK in call and not card_shows_all(approval.snapshot)
    amendable, why_not = card_amendable(run, approval)
    lines = [
        CUT_CARD_TEXT if cut else None,
        closing_line(approval),
        not_run_line(not_run) if not_run is not None else None,
        standing_line(approval, standing),
        window_line(approval, window) if window is not None else None,
        why_not if status == "pending" else None,
        *(reach_lines(reach) if reach is not None else ()),
    ]
    blocks += [mrkdwn_context(line) for line in lines if line]
    buttons = (
        card_buttons(approval, cut=cut, amendable=amendable, deciding=deciding)
        if not_run is None
        else []
    )
    if buttons:
        blocks.append({"type": "actions", "block_id": "decision", "elements": buttons})
    return blocks


def audited_card_blocks(
    *, run: RunRecord, approval: ApprovalRecord, result: str, is_error: bool
) -> list[Block]:
    """The card of an audit-only call, posted after it ran: the call as every card shows
    it (redacted, escaped, hiding characters made visible, cut to the card's room) and
    its result (the same rules), with no buttons: nobody decides it."""
    outcome = "failed" if is_error else "ran"
    title = f":eyes: *Audit only*: `{escape(approval.tool_name, 200)}` {outcome} without waiting"
    shown = escape(visible(result), RESULT_LIMIT) if result else "(no result)"
    return [
        mrkdwn_section(title),
        mrkdwn_context(card_about(run, approval)),
        mrkdwn_section(snapshot_text(approval), block_id=CALL_BLOCK_ID),
        mrkdwn_section(f"*Result:* {shown}"),
        mrkdwn_context(AUDITED_TEXT),
    ]


def card_amendable(run: RunRecord, approval: ApprovalRecord) -> tuple[bool, str | None]:
    """Whether the card offers Approve with changes, and if not, why (None: it does):
    as the call's snapshot says when its engine answered per call (bot.service.amend.
    can_change), else only for the run core's calls."""
    try:
        per_call = ReviewSnapshot.from_json(approval.snapshot).amendable
    except InputError:
        per_call = None
    if per_call is None:
        if run.engine is None:
            return True, None
        return False, not_amendable_text(run.engine.name)
    return per_call, None if per_call else TOOL_NOT_AMENDABLE_TEXT


def card_buttons(
    approval: ApprovalRecord,
    *,
    cut: bool | None = None,
    amendable: bool = True,
    deciding: bool = True,
) -> list[Block]:
    """The buttons for the approval's state; `cut`: whether the card cuts its arguments
    (None: find out), which adds Read all arguments to a pending card; `amendable`:
    whether its run's engine lets approvers change arguments (Approve with changes);
    `deciding`: whether a pending card has the deciding buttons (else Revoke only)."""
    approval_id = approval.approval_id
    if approval.status == "pending":
        buttons = [button("revoke", approval_id)]
        if deciding:
            buttons = [
                button("approve", approval_id),
                *([button("edit", approval_id)] if amendable else []),
                button("reject", approval_id),
                *buttons,
            ]
        if cut if cut is not None else not card_shows_all(approval.snapshot):
            buttons.append(read_all_button(approval_id))
        return buttons
    if approval.status == "approved":
        return [button("revoke", approval_id)]
    return []


def read_all_button(approval_id: str) -> dict[str, Any]:
    return button("read", approval_id)


def read_first_blocks(approval_id: str, text: str) -> list[Block]:
    """An ephemeral refusal of an approval not read whole, with the button to read it."""
    return [
        mrkdwn_section(text),
        {"type": "actions", "block_id": "read", "elements": [read_all_button(approval_id)]},
    ]


def uncertain_call_value(run_id: str, execution_key: str) -> str:
    """The uncertain card's button value: which run, which call."""
    return f"{run_id}:{execution_key}"


def parse_uncertain_call_value(value: str) -> tuple[str, str]:
    """(run_id, execution_key) from an uncertain card's button value (or the modal it
    opened, which carries the same value)."""
    run_id, sep, execution_key = value.partition(":")
    if not sep or not run_id or not execution_key:
        raise InputError(f"{value[:80]!r} does not name an uncertain call")
    return run_id, execution_key


def uncertain_card_blocks(*, run: RunRecord, call: UncertainCall) -> list[Block]:
    """An uncertain call: an operator checks the world, then records the result, retries
    or aborts. The buttons' value names the run and the call's execution key."""
    value = uncertain_call_value(run.run_id, call.execution_key)
    return [
        mrkdwn_section(uncertain_call_text(call.tool_name), block_id=CALL_BLOCK_ID),
        mrkdwn_context(uncertain_about_text(run.agent_name, call.execution_key)),
        {
            "type": "actions",
            "block_id": "reconcile",
            "elements": [
                button("result", value),
                button("retry", value),
                button("abort", value),
            ],
        },
    ]


# -- clicks ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ButtonClick:
    """A button pressed on a review card (or an uncertain call's card), in a channel or
    in App Home (no channel). `approval_id` is the button's value: the approval id, or
    for an uncertain call `run_id:execution_key` (see `uncertain_call`)."""

    action: CardAction
    approval_id: str
    user_id: str
    channel_id: str | None
    message_ts: str | None
    trigger_id: str
    response_url: str | None = None  # answers there reach the person, member or not

    @property
    def uncertain_call(self) -> tuple[str, str]:
        """(run_id, execution_key) of an uncertain call's button (InputError otherwise)."""
        return parse_uncertain_call_value(self.approval_id)


def parse_button_click(body: Mapping[str, Any]) -> ButtonClick:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], Mapping):
        raise InputError("block_actions payload has no actions")
    action = actions[0]
    action_id = text_field(action, "action_id")
    clicked = BY_ACTION_ID.get(action_id)
    if clicked is None:
        raise InputError(f"unexpected action_id {action_id!r}")
    container = mapping_field(body, "container", required=False)
    channel = mapping_field(body, "channel", required=False)
    message = mapping_field(body, "message", required=False)
    value = check_approval_id(text_field(action, "value"))
    if clicked.opens == "reconcile":
        parse_uncertain_call_value(value)
    return ButtonClick(
        action=clicked.word,
        approval_id=value,
        user_id=submitter(body),
        channel_id=optional_text(channel, "id") or optional_text(container, "channel_id"),
        message_ts=optional_text(container, "message_ts") or optional_text(message, "ts"),
        trigger_id=text_field(body, "trigger_id"),
        response_url=optional_text(body, "response_url"),
    )
