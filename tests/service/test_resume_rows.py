"""Which approval row answers a call: the open one, whatever the clock says."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.service.resume import current_rows
from store.api import ApprovalRecord, ApprovalStatus

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def row(approval_id: str, status: ApprovalStatus, *, call: str = "call_1") -> ApprovalRecord:
    return ApprovalRecord(
        approval_id=approval_id,
        run_id="run",
        tool_call_id=call,
        tool_name="deploy_release",
        arguments_digest="0" * 64,
        snapshot="{}",
        status=status,
        requester="U1",
        decider=None,
        reason=None,
        message=None,
        created_at=AT,  # same instant: the order must not depend on it
        decided_at=None,
        expires_at=None,
        revoked_at=None,
        slack_channel=None,
        slack_ts=None,
    )


def test_the_open_row_answers_even_when_a_voided_one_sorts_after_it() -> None:
    voided, asked_again = row("zz-voided", "revoked"), row("aa-new", "approved")
    for order in ([voided, asked_again], [asked_again, voided]):
        assert current_rows(order) == {"call_1": asked_again}


def test_a_call_with_only_a_revoked_row_is_answered_by_it() -> None:
    revoked = row("r1", "revoked")
    other = row("o1", "pending", call="call_2")
    assert current_rows([revoked, other]) == {"call_1": revoked, "call_2": other}
