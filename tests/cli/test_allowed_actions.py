"""What a viewer may do to an approval is one list (`ApprovalView.allowed_actions`) that
Slack's `/approvals show` and the terminal's `approvals show` both say."""

from __future__ import annotations

from bot.commands.approvals import render_view
from bot.service import ApprovalView
from bot.slack.messages.approval_lines import show_text
from tests.slack.records import pending_approval


def view(*, can_decide: bool = False, can_revoke: bool = False, can_reconcile: bool = False):
    return ApprovalView(
        approval=pending_approval("restart_service", {"service": "api"}),
        votes=(),
        approvals_count=0,
        required=1,
        voters=(),
        approvers=(),
        can_decide=can_decide,
        can_revoke=can_revoke,
        can_reconcile=can_reconcile,
        why_not=None if can_decide else "you are not an approver of this tool",
    )


def test_slack_and_the_terminal_say_the_same_allowed_actions() -> None:
    every = view(can_decide=True, can_revoke=True, can_reconcile=True)
    assert every.allowed_actions() == ("decide", "revoke", "reconcile")
    assert "You may decide, revoke, reconcile." in show_text(every)
    assert "U0OPS may: decide, revoke, reconcile" in render_view(every, viewer="U0OPS")

    reconcile_only = view(can_reconcile=True)
    assert reconcile_only.allowed_actions() == ("reconcile",)
    assert "You may reconcile." in show_text(reconcile_only)
    assert "U0OPS may: reconcile\n" in render_view(reconcile_only, viewer="U0OPS") + "\n"


def test_nothing_allowed_says_why_not() -> None:
    none = view()
    assert none.allowed_actions() == ()
    assert "You may not decide: you are not an approver" in show_text(none)
    shown = render_view(none, viewer="U0OPS")
    assert "U0OPS may: nothing" in shown
    assert "not decide: you are not an approver" in shown
