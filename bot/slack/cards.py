"""Review cards: build them in every state, and read back a click on their buttons.

A pending card shows "N of M approvals" and who gave them, with Approve, Approve with
changes, Reject and Revoke (each button's value is the approval id only); when its
arguments are too long for the card it says they are cut and adds Read all arguments
(an approval counts only from someone who has read them whole, bot.service.reading). An approved
card keeps Revoke until the call runs, or until the last check before it ran refused
it (the card then says why it was not run); rejected, expired and revoked cards have no
buttons and say who, when and why. An uncertain call's card has Record result, Retry and
Abort, whose value names the run and the call (`run_id:execution_key`).

The action ids and button values are what cards already posted in Slack send back: they
do not change. Pure builders and parsers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot
from bot.service import UncertainCall
from bot.service.reading import CUT_MARK, card_shows_all
from bot.slack.blocks import (
    CALL_BLOCK_ID,
    CONTEXT_TEXT_LIMIT,
    Block,
    escape,
    escape_join,
    mrkdwn_context,
    mrkdwn_section,
    person,
    slack_date,
    snapshot_text,
)
from bot.slack.messages.approval_lines import quorum_line
from bot.slack.messages.forms import CUT_CARD_TEXT, READ_ALL_LABEL
from bot.slack.modals import (
    CardAction,
    check_approval_id,
    mapping_field,
    optional_text,
    submitter,
    text_field,
)
from store.records import ApprovalRecord, RunRecord, StandingDecision

APPROVE_ACTION_ID = "approval_approve"
REJECT_ACTION_ID = "approval_reject"
EDIT_ACTION_ID = "approval_edit"
NOT_AMENDABLE_TEXT = (
    "Runs of {engine} agents cannot be approved with changes: approve or reject the call as it is."
)
TOOL_NOT_AMENDABLE_TEXT = (
    "This tool's arguments cannot be changed here (its schema cannot be checked safely): "
    "approve or reject the call as it is."
)
REVOKE_ACTION_ID = "approval_revoke"
READ_ACTION_ID = "approval_read"
RECORD_RESULT_ACTION_ID = "uncertain_record_result"
RETRY_ACTION_ID = "uncertain_retry"
ABORT_ACTION_ID = "uncertain_abort"

CARD_ACTIONS: Mapping[str, CardAction] = {
    APPROVE_ACTION_ID: "approve",
    REJECT_ACTION_ID: "reject",
    EDIT_ACTION_ID: "edit",
    REVOKE_ACTION_ID: "revoke",
    READ_ACTION_ID: "read",
    RECORD_RESULT_ACTION_ID: "result",
    RETRY_ACTION_ID: "retry",
    ABORT_ACTION_ID: "abort",
}
RECONCILE_ACTIONS = frozenset({"result", "retry", "abort"})
MAX_STANDING_SHOWN = 5  # each line at most ~300 characters

_TITLES = {
    "approved": ":white_check_mark: *Approved*",
    "rejected": ":no_entry: *Rejected*",
    "expired": ":hourglass: *Expired*",
    "revoked": ":leftwards_arrow_with_hook: *Revoked*",
    "pending": ":lock: *Approval needed*",
}


def approval_card_blocks(
    *,
    run: RunRecord,
    approval: ApprovalRecord,
    voters: Sequence[str] | None,
    not_run: str | None = None,
    standing: Sequence[StandingDecision] = (),
) -> list[Block]:
    """The card for an approval in any state, from its record and the voters on its
    current digest (None: not known here, the quorum line is left out). `not_run` is why
    an approved call was stopped right before it ran: said on the card, no buttons.
    `standing`: the run's active standing decisions; the card that made one says it
    stands, a pending card names those of its run."""
    status = approval.status
    title = f"{_TITLES.get(status, f'*{escape(status, 50)}*')}: `{escape(approval.tool_name, 200)}`"
    if status in ("approved", "rejected") and approval.decider:
        title += f" by {person(approval.decider)}"
    if status == "approved" and approval.decided_at:
        title += f" {slack_date(approval.decided_at)}"
    blocks: list[Block] = [
        mrkdwn_section(title),
        mrkdwn_context(_about(run, approval)),
    ]
    if voters is not None:
        line = quorum_line(count=len(voters), required=approval.required_approvals, voters=voters)
        blocks.append(mrkdwn_context(line))
    call = snapshot_text(approval)
    blocks.append(mrkdwn_section(call, block_id=CALL_BLOCK_ID))
    # No cut mark, no cut; with one (cut, or a value quoting it) the rule decides.
    cut = status == "pending" and CUT_MARK in call and not card_shows_all(approval.snapshot)
    if cut:
        blocks.append(mrkdwn_context(CUT_CARD_TEXT))
    closing = _closing_line(approval)
    if closing:
        blocks.append(mrkdwn_context(closing))
    if not_run is not None:
        blocks.append(mrkdwn_context(f"*Not run:* {escape(not_run, CONTEXT_TEXT_LIMIT - 100)}"))
    stands = standing_line(approval, standing)
    if stands is not None:
        blocks.append(mrkdwn_context(stands))
    per_tool = _amendable_tool(approval)
    amendable = run.engine is None if per_tool is None else per_tool
    if run.engine is not None and status == "pending" and not amendable:
        line = NOT_AMENDABLE_TEXT if per_tool is None else TOOL_NOT_AMENDABLE_TEXT
        blocks.append(mrkdwn_context(line.format(engine=run.engine.name)))
    buttons = card_buttons(approval, cut=cut, amendable=amendable) if not_run is None else []
    if buttons:
        blocks.append({"type": "actions", "block_id": "decision", "elements": buttons})
    return blocks


def _amendable_tool(approval: ApprovalRecord) -> bool | None:
    """Whether approvers may change this call's arguments, when its engine decides that
    per tool (None: it does not; then only the run core's calls may be changed)."""
    try:
        return ReviewSnapshot.from_json(approval.snapshot).amendable
    except InputError:
        return None


def standing_line(approval: ApprovalRecord, standing: Sequence[StandingDecision]) -> str | None:
    """What the card says of the run's standing decisions: on the card that made one,
    that it stands and how to stop it; on a pending card, which ones hold in its run."""
    own = next((d for d in standing if d.approval_id == approval.approval_id), None)
    if own is not None:
        verb = "approved" if own.decision == "approved" else "rejected"
        return (
            f":pushpin: Stands for the rest of this run: every later "
            f"`{escape(own.tool_name, 200)}` call is {verb} in {person(own.decider)}'s name. "
            f"Stop it: `/approvals revoke {escape(own.approval_id, 100)}`"
        )
    if approval.status != "pending" or not standing:
        return None
    held = [
        f"`{escape(d.tool_name, 100)}` {d.decision} by {person(d.decider)} "
        f"(`{escape(d.approval_id, 100)}`)"
        for d in standing[:MAX_STANDING_SHOWN]
    ]
    return escape_join([":pushpin: Standing in this run:", *held], CONTEXT_TEXT_LIMIT)


def approval_card_text(approval: ApprovalRecord) -> str:
    """The notification text (and the fallback for clients without blocks)."""
    if approval.status == "pending":
        return f"Approval needed: {escape(approval.tool_name, 200)}"
    who = approval.revoked_by if approval.status == "revoked" else approval.decider
    by = f" by {person(who)}" if who else ""
    return f"{approval.status.capitalize()}{by}: {escape(approval.tool_name, 200)}"


def card_buttons(
    approval: ApprovalRecord, *, cut: bool | None = None, amendable: bool = True
) -> list[Block]:
    """The buttons for the approval's state; `cut`: whether the card cuts its arguments
    (None: find out), which adds Read all arguments to a pending card; `amendable`:
    whether its run's engine lets approvers change arguments (Approve with changes)."""
    approval_id = approval.approval_id
    if approval.status == "pending":
        buttons = [
            _button("Approve", APPROVE_ACTION_ID, approval_id, style="primary"),
            *([_button("Approve with changes", EDIT_ACTION_ID, approval_id)] if amendable else []),
            _button("Reject", REJECT_ACTION_ID, approval_id, style="danger"),
            _button("Revoke", REVOKE_ACTION_ID, approval_id),
        ]
        if cut if cut is not None else not card_shows_all(approval.snapshot):
            buttons.append(read_all_button(approval_id))
        return buttons
    if approval.status == "approved":
        return [_button("Revoke", REVOKE_ACTION_ID, approval_id)]
    return []


def read_all_button(approval_id: str) -> dict[str, Any]:
    return _button(READ_ALL_LABEL, READ_ACTION_ID, approval_id)


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
        mrkdwn_section(
            f":warning: *Outcome unknown:* `{escape(call.tool_name, 200)}` may or may not "
            "have taken effect: the process stopped while it ran and its replay policy is "
            "manual, so it was not run again.",
            block_id=CALL_BLOCK_ID,
        ),
        mrkdwn_context(
            f"Agent *{escape(run.agent_name, 200)}* · execution key "
            f"`{escape(call.execution_key, 200)}` · admins and the tool's approvers may "
            "reconcile it"
        ),
        {
            "type": "actions",
            "block_id": "reconcile",
            "elements": [
                _button("Record result", RECORD_RESULT_ACTION_ID, value, style="primary"),
                _button("Retry", RETRY_ACTION_ID, value),
                _button("Abort", ABORT_ACTION_ID, value, style="danger"),
            ],
        },
    ]


def _about(run: RunRecord, approval: ApprovalRecord) -> str:
    requester = f" · requested by {person(approval.requester)}" if approval.requester else ""
    expiry = ""
    if approval.status == "pending" and approval.expires_at:
        expiry = f" · expires {slack_date(approval.expires_at)}"
    ident = f" · id `{escape(approval.approval_id, 100)}`"
    return f"Agent *{escape(run.agent_name, 200)}*{requester}{expiry}{ident}"


def _closing_line(approval: ApprovalRecord) -> str | None:
    reason = escape(approval.reason or "(no reason given)", CONTEXT_TEXT_LIMIT - 300)
    if approval.status == "revoked":
        who = person(approval.revoked_by) if approval.revoked_by else "someone"
        when = f" {slack_date(approval.revoked_at)}" if approval.revoked_at else ""
        why = escape(approval.revoke_reason or "(no reason given)", CONTEXT_TEXT_LIMIT - 300)
        return f"Revoked by {who}{when}; it will not run. *Reason:* {why}"
    if approval.status == "expired":
        when = slack_date(approval.expires_at) if approval.expires_at else "its deadline"
        return f"Nobody decided before {when}; the call did not run and the agent was told."
    if approval.status == "rejected":
        when = f" {slack_date(approval.decided_at)}" if approval.decided_at else ""
        return f"Rejected{when}. *Reason:* {reason}"
    if approval.status == "approved":
        return f"*Reason:* {reason}"
    return None


def _button(label: str, action_id: str, value: str, *, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style is not None:
        button["style"] = style
    return button


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
    card_action = CARD_ACTIONS.get(action_id)
    if card_action is None:
        raise InputError(f"unexpected action_id {action_id!r}")
    container = mapping_field(body, "container", required=False)
    channel = mapping_field(body, "channel", required=False)
    message = mapping_field(body, "message", required=False)
    value = check_approval_id(text_field(action, "value"))
    if card_action in RECONCILE_ACTIONS:
        parse_uncertain_call_value(value)
    return ButtonClick(
        action=card_action,
        approval_id=value,
        user_id=submitter(body),
        channel_id=optional_text(channel, "id") or optional_text(container, "channel_id"),
        message_ts=optional_text(container, "message_ts") or optional_text(message, "ts"),
        trigger_id=text_field(body, "trigger_id"),
    )
