"""Fuzzing the Slack payload parsers: whatever a signed request carries (Slack changes a
field, a partner's workspace sends something odd, a member crafts a payload), each
parser answers with what it read or raises from our error tree (bot.errors, mapped to a
clear message at the listener), never another exception. Inputs are real payload shapes
with parts dropped, replaced or retyped (tests.fuzzing), and plain noise."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.errors import ApprovalsError
from bot.slack import (
    actions,
    cards,
    commands,
    decision_modal,
    edit_modal,
    modals,
    observed,
    reading_modal,
    reconcile_modal,
    workspace,
)
from bot.slack.app import parse_thread_reply
from tests.fuzzing import JSON_VALUES, mutated

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIGEST = "ab" * 32
UNCERTAIN = "run-1:0123456789abcdef0123456789abcdef"
OURS = workspace.Workspace(team_id="T1", enterprise_id=None, app_id="A1", org_wide=False)


def click(action_id: str, value: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "team": {"id": "T1"},
        "api_app_id": "A1",
        "user": {"id": "U2", "team_id": "T1"},
        "channel": {"id": "C1"},
        "container": {"message_ts": "1.2", "channel_id": "C1"},
        "trigger_id": "trig",
        "response_url": "https://hooks.slack.com/actions/T1/1/x",
        "message": {"ts": "1.2", "blocks": [{"block_id": "call", "type": "section"}]},
        "actions": [{"action_id": action_id, "value": value, "block_id": "decision"}],
    }


def submission(callback_id: str, metadata: str, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": "U2"},
        "trigger_id": "trig",
        "view": {
            "id": "V1",
            "hash": "h1",
            "callback_id": callback_id,
            "private_metadata": metadata,
            "state": {"values": values},
        },
    }


def typed(block: str, action: str, value: Any) -> dict[str, Any]:
    return {block: {action: {"type": "plain_text_input", "value": value}}}


REASON = typed(modals.REASON_BLOCK_ID, modals.REASON_ACTION_ID, "looks right")
CLICKS = [
    click(action.action_id, UNCERTAIN if action.opens == "reconcile" else "ap_1")
    for action in actions.ACTIONS.values()
]
DECISIONS = [
    submission(
        decision_modal.DECISION_CALLBACK_ID,
        f"{word}|ap_1|C1|{DIGEST}",
        {
            **REASON,
            **typed(decision_modal.MESSAGE_BLOCK_ID, decision_modal.MESSAGE_ACTION_ID, "no"),
        },
    )
    for word in ("approve", "reject", "revoke")
]
EDIT = submission(
    edit_modal.EDIT_CALLBACK_ID,
    f"edit|ap_1|C1|{DIGEST}",
    {**REASON, **typed(edit_modal.ARGUMENTS_BLOCK_ID, edit_modal.ARGUMENTS_ACTION_ID,
                       '{"version": "1.2.4"}')},
)  # fmt: skip
RECONCILES = [
    submission(
        reconcile_modal.RECONCILE_CALLBACK_ID,
        f"{word}|{UNCERTAIN}|C1",
        {
            **REASON,
            **typed(reconcile_modal.RESULT_BLOCK_ID, reconcile_modal.RESULT_ACTION_ID, "it ran"),
        },
    )
    for word in ("result", "retry", "abort")
]
READING = {
    **submission(reading_modal.READ_CALLBACK_ID, f"approve|ap_1|C1|{DIGEST}", {}),
    "type": "block_actions",
    "actions": [{"action_id": reading_modal.NEXT_PAGE_ACTION_ID, "value": "2"}],
}
COMMANDS = [
    {"command": name, "text": text, "user_id": "U1", "channel_id": "C1", "team_id": "T1",
     "trigger_id": "trig", "response_url": "https://hooks.slack.com/commands/T1/1/x"}
    for name, text in [("/agent", "deploy api 1.2.3"), ("/approvals", "reconcile ap_1 abort")]
]  # fmt: skip
MESSAGE = {
    "type": "event_callback",
    "team_id": "T1",
    "api_app_id": "A1",
    "event": {"type": "message", "channel": "C1", "user": "U1", "text": "more", "ts": "2.0",
              "thread_ts": "1.0", "team": "T1"},
}  # fmt: skip


def thread_reply(event: Any) -> object:
    return parse_thread_reply(event, bot_user_id="UBOT")


def reading_page(body: Any) -> object:
    return reading_modal.parse_reading_click(body).page


BODY_PARSERS: dict[str, tuple[Callable[[Any], object], list[Any]]] = {
    "button click": (cards.parse_button_click, CLICKS),
    "decision modal": (decision_modal.parse_decision_submission, DECISIONS),
    "edit modal": (edit_modal.parse_edit_submission, [EDIT]),
    "reconcile modal": (reconcile_modal.parse_reconcile_submission, RECONCILES),
    "reading modal": (reading_page, [READING]),
    "slash command": (commands.parse_slash_command, COMMANDS),
    "thread reply": (thread_reply, [MESSAGE["event"]]),
    "workspace guard": (
        lambda body: workspace.find_foreign(body, OURS, allow_external_users=False),
        [*CLICKS, *DECISIONS, *COMMANDS, MESSAGE],
    ),
    "request kind": (observed.request_kind, [*CLICKS, *DECISIONS, *COMMANDS, MESSAGE]),
}
TEXT_PARSERS: dict[str, tuple[Callable[[str], object], list[str]]] = {
    "/agent": (commands.parse_agent_command, ["@ops deploy api 1.2.3", "agent=ops go", "help"]),
    "/approvals": (
        commands.parse_approvals_command,
        [
            "list 2",
            "show ap_1",
            "revoke ap_1 wrong",
            "cancel r1 why",
            "reconcile ap_1 result it ran",
            "away until 2026-12-24 stand-in <@U02ABC>",
            "back",
            "audit ap_1",
        ],
    ),
    "modal metadata": (modals.decode_modal_context, [f"approve|ap_1|C1|{DIGEST}", "read|a|"]),
    "uncertain call value": (cards.parse_uncertain_call_value, [UNCERTAIN]),
}


def answered(parse: Callable[[Any], object], payload: Any) -> None:
    """`parse` answers or raises one of ours; Bolt hands listeners dicts, so anything
    the mutation left there is fair."""
    with contextlib.suppress(ApprovalsError):
        parse(payload)


def test_the_valid_payloads_parse() -> None:
    """The fuzzed payloads start out valid (else the fuzzing only tests the first guard)."""
    for parse, valid in BODY_PARSERS.values():
        for body in valid:
            parse(body)
    for parse_text, texts in TEXT_PARSERS.values():
        for text in texts:
            parse_text(text)


@pytest.mark.parametrize("name", sorted(BODY_PARSERS))
@FUZZ
@given(data=st.data())
def test_a_damaged_payload_is_parsed_or_refused_by_our_errors(
    name: str, data: st.DataObject
) -> None:
    parse, valid = BODY_PARSERS[name]
    body = data.draw(st.sampled_from(valid).flatmap(mutated), label="body")
    if isinstance(body, dict):
        answered(parse, body)


@pytest.mark.parametrize("name", sorted(BODY_PARSERS))
@FUZZ
@given(body=st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=6))
def test_a_payload_of_noise_is_refused_by_our_errors(name: str, body: dict[str, Any]) -> None:
    answered(BODY_PARSERS[name][0], body)


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@FUZZ
@given(data=st.data())
def test_any_command_text_is_parsed_or_refused_by_our_errors(
    name: str, data: st.DataObject
) -> None:
    parse, examples = TEXT_PARSERS[name]
    words = st.sampled_from([word for text in examples for word in text.split()])
    text = data.draw(
        st.one_of(
            st.text(max_size=80),
            st.lists(st.one_of(words, st.text(max_size=8)), max_size=6).map(" ".join),
            st.lists(st.one_of(words, st.text(max_size=8)), max_size=6).map("|".join),
        ),
        label="text",
    )
    answered(parse, text)
