"""The authority rules as pure functions: who may revoke and who may reconcile.

The operations (revoke, reconcile) and the read model (ApprovalView.can_revoke /
can_reconcile) call these same functions; here they are checked on their own, over
every status and every kind of person."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.policy.eligibility import Eligibility, Eligible, NotEligible
from bot.policy.loading import parse_policy
from bot.policy.rules import ToolRule
from bot.service.authority import (
    NOT_A_CHANNEL_MEMBER,
    channel_scope,
    may_reconcile,
    may_revoke,
    may_see,
    revoke_refusal,
    scoped,
    why_not_stand,
)
from store.records import ApprovalRecord, ApprovalStatus

ADMIN, REQUESTER, APPROVER, STRANGER = "U0ADMIN", "U0REQ", "U0APP", "U0STRANGE"
POLICY = parse_policy(f"admins = ['{ADMIN}']\n", source="test")
ELIGIBLE = Eligible(via="listed")
NOT_AN_APPROVER = NotEligible(reason="not an approver", code="not_an_approver")
SELF = NotEligible(reason="your own call", code="self_approval")
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
APPROVAL = ApprovalRecord(
    approval_id="ap1",
    run_id="r1",
    tool_call_id="call_1",
    tool_name="deploy_release",
    arguments_digest="0" * 64,
    snapshot="{}",
    status="pending",
    requester=REQUESTER,
    decider=None,
    reason=None,
    message=None,
    created_at=NOW,
    decided_at=None,
    expires_at=None,
    revoked_at=None,
    slack_channel=None,
    slack_ts=None,
)
STATUSES: tuple[ApprovalStatus, ...] = ("pending", "approved", "rejected", "expired", "revoked")


@pytest.mark.parametrize(
    ("user", "verdict", "allowed"),
    [
        (ADMIN, NOT_AN_APPROVER, True),  # admins, eligible or not
        (REQUESTER, SELF, True),  # the run's requester, though they may not decide
        (APPROVER, ELIGIBLE, True),  # anyone eligible to decide
        (STRANGER, NOT_AN_APPROVER, False),
    ],
)
def test_who_may_revoke(user: str, verdict: Eligibility, allowed: bool) -> None:
    assert may_revoke(POLICY, verdict, APPROVAL, user) is allowed


@pytest.mark.parametrize("status", STATUSES)
def test_revocation_is_refused_to_strangers_first_then_on_closed_calls(
    status: ApprovalStatus,
) -> None:
    approval = replace(APPROVAL, status=status)
    open_ = status in ("pending", "approved")
    assert revoke_refusal(POLICY, NOT_AN_APPROVER, approval, STRANGER) == "not_authorized"
    for user, verdict in ((ADMIN, NOT_AN_APPROVER), (REQUESTER, SELF), (APPROVER, ELIGIBLE)):
        expected = None if open_ else "closed"
        assert revoke_refusal(POLICY, verdict, approval, user) == expected


@pytest.mark.parametrize(
    ("user", "verdict", "allowed"),
    [
        (ADMIN, SELF, True),  # an admin, even for their own call
        (APPROVER, ELIGIBLE, True),
        (REQUESTER, SELF, False),  # the call's requester may not settle its outcome
        (STRANGER, NOT_AN_APPROVER, False),
    ],
)
def test_who_may_reconcile(user: str, verdict: Eligibility, allowed: bool) -> None:
    assert may_reconcile(POLICY, verdict, user) is allowed


@pytest.mark.parametrize(
    ("channel", "scope"),
    [
        ("C0PRIVATE", "C0PRIVATE"),  # a channel, public or private: its members
        ("G0GROUPDM", "G0GROUPDM"),  # a group DM or an old private channel: its members
        ("D0DIRECT", None),  # a DM with the bot: the policy alone
        (None, None),  # started from code: the policy alone
    ],
)
def test_which_conversation_scopes_a_call(channel: str | None, scope: str | None) -> None:
    assert channel_scope(channel) == scope


@pytest.mark.parametrize(
    ("user", "verdict", "member", "expected"),
    [
        (APPROVER, ELIGIBLE, True, ELIGIBLE),
        (APPROVER, ELIGIBLE, False, NOT_A_CHANNEL_MEMBER),
        (APPROVER, ELIGIBLE, None, ELIGIBLE),  # no channel to be a member of
        (STRANGER, NOT_AN_APPROVER, False, NOT_A_CHANNEL_MEMBER),  # membership first
        (REQUESTER, SELF, True, SELF),
        (ADMIN, ELIGIBLE, False, ELIGIBLE),  # admins aside
    ],
)
def test_only_members_of_the_calls_channel_are_eligible(
    user: str, verdict: Eligibility, member: bool | None, expected: Eligibility
) -> None:
    assert scoped(POLICY, verdict, user, member=member) == expected


@pytest.mark.parametrize(
    ("user", "member", "allowed"),
    [
        (APPROVER, True, True),
        (APPROVER, None, True),
        (APPROVER, False, False),
        (STRANGER, False, False),
        (REQUESTER, False, True),  # they asked for it
        (ADMIN, False, True),
    ],
)
def test_who_may_see_a_call(user: str, member: bool | None, allowed: bool) -> None:
    assert may_see(POLICY, APPROVAL, user, member=member) is allowed


def test_a_non_member_may_not_revoke_unless_requester_or_admin() -> None:
    assert not may_revoke(POLICY, NOT_A_CHANNEL_MEMBER, APPROVAL, APPROVER)
    assert may_revoke(POLICY, NOT_A_CHANNEL_MEMBER, APPROVAL, REQUESTER)
    assert not may_reconcile(POLICY, NOT_A_CHANNEL_MEMBER, APPROVER)


def test_a_decision_stands_only_where_the_policy_allows_it_for_a_one_approval_call() -> None:
    allowed = ToolRule(allow_always=True)
    assert why_not_stand(allowed, APPROVAL) is None
    assert why_not_stand(ToolRule(), APPROVAL) == "the policy does not allow it for this tool"
    two = replace(APPROVAL, required_approvals=2)  # fixed when the call was asked
    assert why_not_stand(allowed, two) == "the call needs 2 approvals"
