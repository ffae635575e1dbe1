"""Pure builders and parsers of the governance surface: cards in every state, App Home
within Block Kit's limits, the edit and reconcile modals' submissions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.credentials import REDACTED
from bot.errors import InputError
from bot.review.snapshot import ReviewSnapshot, review_snapshot
from bot.runtime import AbortCall, VerifiedResult
from bot.service import ApprovalView, Page, UncertainCall
from bot.slack import cards, home
from bot.slack.edit_modal import (
    EDIT_CALLBACK_ID,
    EditSubmission,
    editable_arguments,
    parse_edit_submission,
)
from bot.slack.messages import approval_lines
from bot.slack.modals import InvalidSubmission
from bot.slack.reconcile_modal import (
    RECONCILE_CALLBACK_ID,
    ReconcileSubmission,
    parse_reconcile_submission,
)
from tests.slack.records import NOW
from tests.slack.test_blocks import RUN, approval


def labels(blocks: list[dict[str, Any]]) -> list[str]:
    return [
        element["text"]["text"]
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


@pytest.mark.parametrize(
    ("status", "buttons"),
    [
        ("pending", ["Approve", "Approve with changes", "Reject", "Revoke"]),
        ("approved", ["Revoke"]),
        ("rejected", []),
        ("expired", []),
        ("revoked", []),
    ],
)
def test_card_buttons_follow_the_state(status: str, buttons: list[str]) -> None:
    record = approval(status=status, decider="U0DEC", decided_at=NOW)
    blocks = cards.approval_card_blocks(run=RUN, approval=record, voters=None)
    assert labels(blocks) == buttons
    values = {e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]}
    assert values <= {"ap1"}


def texts(block_list: list[dict[str, Any]]) -> list[str]:
    found = []
    for block in block_list:
        if isinstance(block.get("text"), dict):
            found.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element.get("text"), str):
                found.append(element["text"])
    return found


def test_a_pending_card_shows_the_call_digest_expiry_and_requester() -> None:
    record = approval()
    card = cards.approval_card_blocks(run=RUN, approval=record, voters=())
    joined = "\n".join(texts(card))
    assert record.arguments_digest in joined
    assert '"version": "1.2.3"' in joined
    assert "<!date^" in joined
    assert "<@U0REQ>" in joined
    assert "*0 of 1 approval*" in joined
    assert all(len(text) <= 3000 for text in texts(card))


def test_a_rejected_card_has_no_buttons_and_says_who_when_why() -> None:
    record = approval(status="rejected", decider="U0APP", decided_at=NOW, reason="<b>no</b>")
    card = cards.approval_card_blocks(run=RUN, approval=record, voters=None)
    assert labels(card) == []
    joined = "\n".join(texts(card))
    assert "Rejected" in joined
    assert "<@U0APP>" in joined
    assert "&lt;b&gt;no&lt;/b&gt;" in joined
    assert "<!date^" in joined
    assert record.arguments_digest in joined


def test_an_expired_card_names_no_person_and_survives_an_unreadable_snapshot() -> None:
    record = approval(status="expired", snapshot="{not json")
    joined = "\n".join(texts(cards.approval_card_blocks(run=RUN, approval=record, voters=None)))
    assert "Expired" in joined
    assert "<@" not in joined.replace("<@U0REQ>", "")
    assert "(snapshot unreadable)" in joined
    assert record.arguments_digest in joined


def test_an_approved_card_stopped_before_it_ran_says_why_and_has_no_buttons() -> None:
    record = approval(status="approved", decider="U0APP", decided_at=NOW, reason="ok")
    card = cards.approval_card_blocks(
        run=RUN, approval=record, voters=None, not_run="approver <@U0APP> left"
    )
    assert labels(card) == []
    joined = "\n".join(texts(card))
    assert "Approved" in joined
    assert "*Not run:* approver &lt;@U0APP&gt; left" in joined


def test_the_quorum_line_names_the_voters_and_is_bounded() -> None:
    assert approval_lines.quorum_line(count=0, required=1, voters=()) == "*0 of 1 approval*"
    line = approval_lines.quorum_line(count=1, required=2, voters=("U0AAA",))
    assert line == "*1 of 2 approvals* · approved by <@U0AAA>"
    many = [f"U0{n:05d}" for n in range(50)]
    assert approval_lines.quorum_line(count=50, required=60, voters=many).endswith("and 30 more")


def test_a_revoked_card_says_who_when_and_why() -> None:
    record = approval(
        status="revoked", revoked_by="U0REV", revoked_at=NOW, revoke_reason="wrong <target>"
    )
    text = json.dumps(cards.approval_card_blocks(run=RUN, approval=record, voters=None))
    assert "Revoked by <@U0REV>" in text
    assert "wrong &lt;target&gt;" in text
    assert "<!date^" in text


def test_the_uncertain_card_names_run_and_call() -> None:
    call = UncertainCall(
        run_id="r1", tool_call_id="c1", tool_name="restart_service", execution_key="abc123"
    )
    blocks = cards.uncertain_card_blocks(run=RUN, call=call)
    assert labels(blocks) == ["Record result", "Retry", "Abort"]
    (value,) = {e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]}
    assert cards.parse_uncertain_call_value(value) == ("r1", "abc123")
    with pytest.raises(InputError):
        cards.parse_uncertain_call_value("no-colon")


def _view(number: int) -> ApprovalView:
    return ApprovalView(
        approval=approval(approval_id=f"ap{number}"),
        votes=(),
        approvals_count=0,
        required=2,
        voters=(),
        approvers=("S0REL",),
        can_decide=True,
        can_revoke=True,
        can_reconcile=False,
        why_not=None,
    )


def test_app_home_stays_within_block_kit_limits() -> None:
    pending = Page(items=tuple(_view(n) for n in range(40)), next_cursor="more")
    view = home.home_view(
        pending=pending,
        requested=[_view(n) for n in range(40)],
        recent=[approval(approval_id=f"d{n}", status="approved", decider="U0D") for n in range(40)],
    )
    assert len(view["blocks"]) <= 100
    for block in view["blocks"]:
        text = block.get("text", {}).get("text", "")
        assert len(text) <= 3000
    # the pointer to the rest names the list's own paging: its first page starts with the
    # calls Home shows (15), so pointing at page 2 would skip the 16th to the 20th
    assert approval_lines.more_pending_text() in json.dumps(view)
    assert "`/approvals list` shows them all, 20 a page" in approval_lines.more_pending_text()
    shown = [
        b
        for b in view["blocks"]
        if b["type"] == "actions" and not b.get("block_id", "").startswith("bulk:")
    ]
    assert len(shown) == home.HOME_PENDING_LIMIT
    # and the oldest 30 of the 40 (one tool) to decide at once, 10 to a checkboxes element
    ticks = [b for b in view["blocks"] if b["type"] == "input"]
    assert [len(b["element"]["options"]) for b in ticks] == [10, 10, 10]


def _submission(callback_id: str, metadata: str, values: dict[str, str | None]) -> dict[str, Any]:
    state = {
        block_id: {action_id: {"type": "plain_text_input", "value": value}}
        for (block_id, action_id), value in (
            ((key.split("/")[0], key.split("/")[1]), value) for key, value in values.items()
        )
    }
    return {
        "type": "view_submission",
        "user": {"id": "U0APP"},
        "view": {
            "callback_id": callback_id,
            "private_metadata": metadata,
            "state": {"values": state},
        },
    }


def _edit(arguments: str | None, reason: str | None = "fix") -> Any:
    return parse_edit_submission(
        _submission(
            EDIT_CALLBACK_ID,
            "edit|ap1|C1",
            {"arguments/arguments_input": arguments, "reason/reason_input": reason},
        )
    )


def test_edit_submission_parses_an_object() -> None:
    parsed = _edit('{"service": "payments", "version": "1.2.4"}')
    assert parsed == EditSubmission(
        approval_id="ap1",
        channel_id="C1",
        user_id="U0APP",
        arguments={"service": "payments", "version": "1.2.4"},
        reason="fix",
    )


@pytest.mark.parametrize(
    ("arguments", "reason", "errors"),
    [
        ("{nope", "fix", {"arguments": "Not valid JSON: Expecting property name"}),
        ("[1, 2]", "fix", {"arguments": "must be a JSON object"}),
        (None, "fix", {"arguments": "Give the arguments"}),
        ("{}", None, {"reason": "Give a reason"}),
    ],
)
def test_edit_submission_mistakes_are_inline(
    arguments: str | None, reason: str | None, errors: dict[str, str]
) -> None:
    parsed = _edit(arguments, reason)
    assert isinstance(parsed, InvalidSubmission)
    assert set(parsed.errors) == set(errors)
    for key, needle in errors.items():
        assert needle in parsed.errors[key]


def test_editable_arguments_show_redactions_and_refuse_what_does_not_fit() -> None:
    snapshot = review_snapshot(
        "set_config", {"key": "token", "value": "xoxb-" + "1" * 40}, digest="d2" * 32
    )
    shown = editable_arguments(snapshot)
    assert shown is not None
    assert json.loads(shown)["value"] == REDACTED
    big = review_snapshot("echo", {"text": "x" * 4000}, digest="d3" * 32)
    assert editable_arguments(big) is None
    partial = ReviewSnapshot.from_dict({**snapshot.to_dict(), "omitted_fields": ["extra"]})
    assert editable_arguments(partial) is None


def test_reconcile_submissions() -> None:
    metadata = "result|r1:abc123|C1"
    parsed = parse_reconcile_submission(
        _submission(
            RECONCILE_CALLBACK_ID,
            metadata,
            {
                "verified_result/verified_result_input": " done at 10:02 ",
                "reason/reason_input": "checked",
            },
        )
    )
    assert parsed == ReconcileSubmission(
        run_id="r1",
        execution_key="abc123",
        channel_id="C1",
        user_id="U0APP",
        resolution=VerifiedResult(result="done at 10:02"),
        reason="checked",
    )
    aborted = parse_reconcile_submission(
        _submission(RECONCILE_CALLBACK_ID, "abort|r1:abc123|", {"reason/reason_input": "no"})
    )
    assert isinstance(aborted, ReconcileSubmission)
    assert aborted.resolution == AbortCall()
    missing = parse_reconcile_submission(
        _submission(RECONCILE_CALLBACK_ID, metadata, {"reason/reason_input": "checked"})
    )
    assert isinstance(missing, InvalidSubmission)
    assert set(missing.errors) == {"verified_result"}
    with pytest.raises(InputError):
        parse_reconcile_submission(
            _submission(RECONCILE_CALLBACK_ID, "approve|ap1|C1", {"reason/reason_input": "x"})
        )
