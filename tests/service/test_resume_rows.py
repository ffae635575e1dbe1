"""Which approval row answers a call: the open one, whatever the clock says; by the
call's execution key, or for a row from before keys were stored, by its tool call id."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.runtime import PendingCall
from bot.service.applying import current_rows, row_for
from store.records import LEGACY_KEY_PREFIX, ApprovalRecord, ApprovalStatus

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
        execution_key=f"key-of-{call}",
    )


def test_the_open_row_answers_even_when_a_voided_one_sorts_after_it() -> None:
    voided, asked_again = row("zz-voided", "revoked"), row("aa-new", "approved")
    for order in ([voided, asked_again], [asked_again, voided]):
        assert current_rows(order) == {"key-of-call_1": asked_again}


def test_a_call_with_only_a_revoked_row_is_answered_by_it() -> None:
    revoked = row("r1", "revoked")
    other = row("o1", "pending", call="call_2")
    assert current_rows([revoked, other]) == {"key-of-call_1": revoked, "key-of-call_2": other}


def test_a_row_from_before_keys_answers_its_call_by_tool_call_id() -> None:
    legacy = replace(row("l1", "approved"), execution_key=LEGACY_KEY_PREFIX + "call_1")
    call = PendingCall(
        tool_call_id="call_1",
        tool_name="deploy_release",
        arguments={},
        execution_key="a" * 32,
        status="approval",
    )
    assert row_for(current_rows([legacy]), call) == legacy
    keyed = row("k1", "approved")
    assert row_for(current_rows([keyed]), call) is None  # another call's key
