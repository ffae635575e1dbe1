"""The card buttons' one table (bot.slack.actions) covers every action, keeps the action
ids cards already posted in Slack send back, and round-trips through a modal's metadata."""

from __future__ import annotations

from typing import get_args

from bot.slack.actions import ACTIONS, BY_ACTION_ID, READS_FIRST, CardAction, button, card_action
from bot.slack.modals import ModalContext, decode_modal_context, encode_modal_context

POSTED_ACTION_IDS = {
    "approve": "approval_approve",
    "edit": "approval_edit",
    "reject": "approval_reject",
    "revoke": "approval_revoke",
    "read": "approval_read",
    "result": "uncertain_record_result",
    "retry": "uncertain_retry",
    "abort": "uncertain_abort",
}


def test_every_action_has_one_row_and_keeps_the_action_id_cards_were_posted_with() -> None:
    assert set(ACTIONS) == set(get_args(CardAction))
    assert {word: action.action_id for word, action in ACTIONS.items()} == POSTED_ACTION_IDS
    assert {action_id: action.word for action_id, action in BY_ACTION_ID.items()} == {
        action_id: word for word, action_id in POSTED_ACTION_IDS.items()
    }
    assert all(word == action.word for word, action in ACTIONS.items())


def test_what_each_action_needs_and_opens() -> None:
    needs = {word: action.allowed_by for word, action in ACTIONS.items()}
    assert needs == {
        "approve": "decide",
        "edit": "decide",
        "reject": "decide",
        "revoke": "revoke",
        "read": None,
        "result": "reconcile",
        "retry": "reconcile",
        "abort": "reconcile",
    }
    assert {"approve", "edit"} == READS_FIRST
    assert {w for w, a in ACTIONS.items() if a.opens == "reconcile"} == {"result", "retry", "abort"}


def test_a_button_and_a_modal_carry_the_action() -> None:
    assert button("reject", "ap1") == {
        "type": "button",
        "text": {"type": "plain_text", "text": "Reject", "emoji": True},
        "action_id": "approval_reject",
        "value": "ap1",
        "style": "danger",
    }
    for word in ACTIONS:
        context = ModalContext(approval_id="ap1", action=word, channel_id="C1")
        assert decode_modal_context(encode_modal_context(context)).action == word
    assert card_action("approve") == "approve"
    assert card_action("approval_approve") is None  # a word, not an action id
