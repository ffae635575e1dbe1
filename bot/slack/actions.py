"""The buttons of a review card, in one table: what each asks for, its action id, label
and style, which of the viewer's allowed actions (`ApprovalView.allowed_actions`) lets
them do it, and which form a click on it opens.

The cards lay their buttons out from it (bot.slack.cards), the app registers a listener
per action id (bot.slack.app), the click handler opens the form it names
(bot.slack.card_buttons), and a modal carries the action's word in its metadata
(bot.slack.modals). The action ids are what cards already posted in Slack send back:
they do not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.service.api import ViewerAction
from bot.slack.messages.forms import READ_ALL_LABEL

CardAction = Literal["approve", "reject", "edit", "revoke", "result", "retry", "abort", "read"]
"""What a button on a card asks for; the modal it opens carries the same word (a reading
modal opened by Approve or Approve with changes carries that one: where it continues)."""

Form = Literal["decision", "edit", "reading", "reconcile"]
"""What a click opens: the reason modal (bot.slack.decision_modal), the edit modal
(bot.slack.edit_modal), the reading modal (bot.slack.reading) or the reconcile modal of
an uncertain call (bot.slack.reconcile_modal)."""

APPROVE_ACTION_ID = "approval_approve"
REJECT_ACTION_ID = "approval_reject"
EDIT_ACTION_ID = "approval_edit"
REVOKE_ACTION_ID = "approval_revoke"
READ_ACTION_ID = "approval_read"
RECORD_RESULT_ACTION_ID = "uncertain_record_result"
RETRY_ACTION_ID = "uncertain_retry"
ABORT_ACTION_ID = "uncertain_abort"


@dataclass(frozen=True, kw_only=True)
class Action:
    """One button. `allowed_by`: the viewer's allowed action that lets them use it (None:
    anyone who may see the call); `reads_first`: a call its card cuts is read whole
    before the form opens (and the reading continues to it)."""

    word: CardAction
    action_id: str
    label: str
    style: Literal["primary", "danger"] | None = None
    allowed_by: ViewerAction | None
    opens: Form
    reads_first: bool = False


ACTIONS: Mapping[CardAction, Action] = {
    action.word: action
    for action in (
        Action(
            word="approve",
            action_id=APPROVE_ACTION_ID,
            label="Approve",
            style="primary",
            allowed_by="decide",
            opens="decision",
            reads_first=True,
        ),
        Action(
            word="edit",
            action_id=EDIT_ACTION_ID,
            label="Approve with changes",
            allowed_by="decide",
            opens="edit",
            reads_first=True,
        ),
        Action(
            word="reject",
            action_id=REJECT_ACTION_ID,
            label="Reject",
            style="danger",
            allowed_by="decide",
            opens="decision",
        ),
        Action(
            word="revoke",
            action_id=REVOKE_ACTION_ID,
            label="Revoke",
            allowed_by="revoke",
            opens="decision",
        ),
        Action(
            word="read",
            action_id=READ_ACTION_ID,
            label=READ_ALL_LABEL,
            allowed_by=None,
            opens="reading",
        ),
        Action(
            word="result",
            action_id=RECORD_RESULT_ACTION_ID,
            label="Record result",
            style="primary",
            allowed_by="reconcile",
            opens="reconcile",
        ),
        Action(
            word="retry",
            action_id=RETRY_ACTION_ID,
            label="Retry",
            allowed_by="reconcile",
            opens="reconcile",
        ),
        Action(
            word="abort",
            action_id=ABORT_ACTION_ID,
            label="Abort",
            style="danger",
            allowed_by="reconcile",
            opens="reconcile",
        ),
    )
}
BY_ACTION_ID: Mapping[str, Action] = {action.action_id: action for action in ACTIONS.values()}
READS_FIRST: frozenset[CardAction] = frozenset(a.word for a in ACTIONS.values() if a.reads_first)
"""The actions whose form a call its card cuts waits for, until it is read whole."""
_BY_WORD: Mapping[str, Action] = {action.word: action for action in ACTIONS.values()}


def card_action(word: str) -> CardAction | None:
    """The action `word` names (as a modal's metadata carries it), or None."""
    action = _BY_WORD.get(word)
    return None if action is None else action.word


def button(word: CardAction, value: str) -> dict[str, Any]:
    """The Block Kit button of action `word` carrying `value` (an approval id, or an
    uncertain call's `run_id:execution_key`)."""
    action = ACTIONS[word]
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": action.label, "emoji": True},
        "action_id": action.action_id,
        "value": value,
    }
    if action.style is not None:
        element["style"] = action.style
    return element
