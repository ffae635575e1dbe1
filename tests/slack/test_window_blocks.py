"""Approval windows on every surface within Block Kit's limits (the limits the fake Slack
enforces, bot.devconsole.limits), with hostile and oversized names; and which calls a
window may cover, by the policy and the call alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from bot.devconsole.limits import message_problems, view_problems
from bot.policy.loading import parse_policy
from bot.service import Page
from bot.service.api import WindowOffer
from bot.service.windows import match_values, why_not_covered, window_offer
from bot.slack.cards import approval_card_blocks
from bot.slack.decision_modal import decision_modal
from bot.slack.home import home_view
from bot.slack.modals import ModalContext
from bot.slack.windows import HOME_WINDOWS_LIMIT, window_blocks
from store.records import ApprovalWindow
from tests.slack.records import NOW, pending_approval
from tests.slack.test_blocks import RUN

HOSTILE = "<!channel> & *bold* " + "w" * 500
RULE = parse_policy('[defaults]\nallow_window = "2h"\nwindow_match = ["service"]\n').defaults


def window(**fields: object) -> ApprovalWindow:
    base = ApprovalWindow(
        window_id="ap1", run_id="r1", tool_name="deploy_release", match_fields=("service",),
        decider="U0ALICE", reason="release day", created_at=NOW,
        expires_at=NOW + timedelta(hours=2), lasts=timedelta(hours=2), seal="valid",
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


def test_the_modal_card_and_home_fit_with_hostile_names() -> None:
    fields = tuple(HOSTILE[:99] + str(i) for i in range(10))
    hostile = window(tool_name=HOSTILE, match_fields=fields, window_id="x" * 100)
    offer = WindowOffer(lasts=timedelta(hours=24), match_fields=hostile.match_fields)
    context = ModalContext(approval_id="a" * 128, action="approve", channel_id="C1")
    modal = decision_modal(context=context, call="x" * 3000, tool_name=HOSTILE,
                           window=(HOSTILE, offer))  # fmt: skip
    assert view_problems(modal, home=False) == []
    opened = pending_approval(HOSTILE, {"service": "p"}, approval_id="x" * 100, status="approved",
                              decider="U0ALICE", decided_at=NOW)  # fmt: skip
    for approval in (opened, replace(opened, approval_id="other")):
        card = approval_card_blocks(run=RUN, approval=approval, voters=(), window=hostile)
        assert message_problems(card) == []
        assert "<!channel>" not in str(card)
    many = [replace(hostile, window_id=f"w{i}") for i in range(HOME_WINDOWS_LIMIT + 5)]
    home = home_view(pending=Page(items=(), next_cursor=None), requested=(), recent=(),
                     windows=many)  # fmt: skip
    assert view_problems(home, home=True) == []
    assert len(window_blocks(many)) == HOME_WINDOWS_LIMIT + 2  # header, items, "more"


def test_what_a_window_may_cover() -> None:
    call = pending_approval("deploy_release", {"service": "payments", "version": "2"})
    assert why_not_covered(RULE, call, window(), NOW + timedelta(minutes=5)) is None
    quorum = replace(call, required_approvals=2)
    assert window_offer(RULE, quorum) is None
    assert "one approval" in (why_not_covered(RULE, quorum, window(), NOW) or "")
    assert "seal" in (why_not_covered(RULE, call, window(seal="mismatch"), NOW) or "")
    assert "not open" in (why_not_covered(RULE, call, window(), NOW + timedelta(hours=2)) or "")
    shorter = replace(RULE, allow_window=timedelta(hours=1))
    assert "shorter" in (
        why_not_covered(shorter, call, window(), NOW + timedelta(minutes=61)) or ""
    )
    other_fields = replace(RULE, window_match=("service", "version"))
    assert "window_match" in (why_not_covered(other_fields, call, window(), NOW) or "")
    audit = replace(RULE, mode="audit")
    assert window_offer(audit, call) is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"service": "payments", "version": "1"}, '{"service":"payments"}'),
        ({"version": "1"}, None),  # lacks a matched field: never covered
        ({"service": {"b": 1, "a": [1, "ü"]}}, '{"service":{"a":[1,"ü"],"b":1}}'),
    ],
)
def test_matched_values_are_canonical(arguments: dict[str, object], expected: str | None) -> None:
    assert match_values(arguments, ("service",)) == expected
