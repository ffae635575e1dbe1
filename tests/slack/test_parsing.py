"""Pure parts of the Slack surface: signatures, payload parsing, config."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.errors import ConfigError, InputError
from bot.runtime import AbortCall, RetryCall, VerifiedResult
from bot.slack import actions, app, cards, decision_modal, modals
from bot.slack import commands as cmd
from bot.slack.config import load_settings, web_api_from_env
from bot.slack.signature import compute_signature, verify_signature

SECRET = "test-signing-secret"
NOW = 1_800_000_000


def _verify(*, timestamp: str | None, signature: str | None, body: bytes = b"x=1") -> None:
    verify_signature(
        signing_secret=SECRET, timestamp=timestamp, signature=signature, body=body, now=NOW
    )


def test_a_good_signature_verifies() -> None:
    good = compute_signature(signing_secret=SECRET, timestamp=str(NOW), body=b"x=1")
    _verify(timestamp=str(NOW), signature=good)


@pytest.mark.parametrize(
    ("timestamp", "signature", "problem"),
    [
        (None, "v0=" + "0" * 64, "missing X-Slack-Request-Timestamp"),
        ("12ab", "v0=" + "0" * 64, "not a number"),
        ("１２３", "v0=" + "0" * 64, "not a number"),  # unicode digits int() would accept
        ("-5", "v0=" + "0" * 64, "not a number"),
        (str(NOW - 301), "GOOD", "more than 300 s"),
        (str(NOW + 301), "GOOD", "more than 300 s"),
        (str(NOW), None, "missing X-Slack-Signature"),
        (str(NOW), "v1=" + "0" * 64, "not a v0"),
        (str(NOW), "v0=" + "0" * 64, "does not match"),
    ],
)
def test_bad_signatures_name_the_problem(
    timestamp: str | None, signature: str | None, problem: str
) -> None:
    if signature == "GOOD":
        assert timestamp is not None
        signature = compute_signature(signing_secret=SECRET, timestamp=timestamp, body=b"x=1")
    with pytest.raises(InputError, match=problem):
        _verify(timestamp=timestamp, signature=signature)


def test_a_signature_over_another_body_fails() -> None:
    good = compute_signature(signing_secret=SECRET, timestamp=str(NOW), body=b"x=1")
    with pytest.raises(InputError, match="does not match"):
        _verify(timestamp=str(NOW), signature=good, body=b"x=2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", cmd.AgentHelp()),
        ("  HELP ", cmd.AgentHelp()),
        (
            "deploy payments 1.2.3",
            cmd.AgentTask(agent_name=None, task="deploy payments 1.2.3"),
        ),
        ("@ops deploy it", cmd.AgentTask(agent_name="ops", task="deploy it")),
        ("agent=billing refund 42", cmd.AgentTask(agent_name="billing", task="refund 42")),
        ("<@U123> hello", cmd.AgentTask(agent_name=None, task="<@U123> hello")),
    ],
)
def test_agent_command_text(text: str, expected: cmd.AgentCommand) -> None:
    assert cmd.parse_agent_command(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"), [("@ops", "what to do"), ("@b/d go", "not an agent name")]
)
def test_agent_command_mistakes(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        cmd.parse_agent_command(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", cmd.ApprovalsHelp()),
        (" HELP ", cmd.ApprovalsHelp()),
        (" list ", cmd.ApprovalsList(page=1)),
        ("list 3", cmd.ApprovalsList(page=3)),
        ("show ap_1", cmd.ApprovalsShow(approval_id="ap_1")),
        ("audit ap_1", cmd.ApprovalsAudit(approval_id="ap_1")),
        ("revoke ap_1", cmd.ApprovalsRevoke(approval_id="ap_1", reason=None)),
        ("cancel 9f2c", cmd.ApprovalsCancel(run_id="9f2c", reason=None)),
        ("cancel 9f2c  wrong  task ", cmd.ApprovalsCancel(run_id="9f2c", reason="wrong  task")),
        (
            "revoke ap_1  wrong  target ",
            cmd.ApprovalsRevoke(approval_id="ap_1", reason="wrong  target"),
        ),
        (
            "reconcile ap_1 result  restarted at 10:02 ",
            cmd.ApprovalsReconcile(
                approval_id="ap_1", resolution=VerifiedResult(result="restarted at 10:02")
            ),
        ),
        (
            "reconcile ap_1 RETRY",
            cmd.ApprovalsReconcile(approval_id="ap_1", resolution=RetryCall()),
        ),
        (
            "reconcile ap_1 abort",
            cmd.ApprovalsReconcile(approval_id="ap_1", resolution=AbortCall()),
        ),
    ],
)
def test_approvals_command_text(text: str, expected: cmd.ApprovalsCommand) -> None:
    assert cmd.parse_approvals_command(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("frob", "unknown /approvals sub-command 'frob'"),
        ("list x", "the page must be a number"),
        ("list 0", "the page must be a number"),
        ("show", "`show` needs an approval id"),
        ("show a<b", "is not an approval id"),
        ("show ap_1 extra", "unexpected 'extra' after the id"),
        ("reconcile ap_1", "reconcile needs `result <text>`, `retry` or `abort`, got nothing"),
        ("reconcile ap_1 maybe", "got 'maybe'"),
        ("reconcile ap_1 result", "say what the call really did"),
        ("reconcile ap_1 retry now", "`retry` takes nothing after it"),
        ("revoke ap_1 " + "x" * 2001, "keep the reason under 2000"),
        ("cancel", "`cancel` needs a run id"),
        ("cancel 9f2c " + "x" * 2001, "keep the reason under 2000"),
    ],
)
def test_approvals_command_mistakes_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=re.escape(problem)):
        cmd.parse_approvals_command(text)


def _click(action_id: str = actions.APPROVE_ACTION_ID, value: str = "ap_1") -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": "U2"},
        "channel": {"id": "C1"},
        "container": {"message_ts": "1.2", "channel_id": "C1"},
        "trigger_id": "trig",
        "message": {
            "ts": "1.2",
            "blocks": [
                {"block_id": "call", "type": "section", "text": {"type": "mrkdwn", "text": "CALL"}},
                {
                    "block_id": "digest",
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": "DIG"},
                },
            ],
        },
        "actions": [{"action_id": action_id, "value": value, "block_id": "decision"}],
    }


def test_button_click_parses_to_the_approval_id_and_where_it_was_pressed() -> None:
    click = cards.parse_button_click(_click(actions.REJECT_ACTION_ID))
    assert click == cards.ButtonClick(
        action="reject",
        approval_id="ap_1",
        user_id="U2",
        channel_id="C1",
        message_ts="1.2",
        trigger_id="trig",
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (_click(action_id="other"), "unexpected action_id"),
        (_click(value="<script>"), "not an approval id"),
        ({**_click(), "actions": []}, "no actions"),
        ({**_click(), "user": None}, "'user'"),
    ],
)
def test_malformed_button_clicks(body: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        cards.parse_button_click(body)


def _submission(action: str, reason: str | None, message: str | None = None) -> dict[str, Any]:
    values: dict[str, Any] = {
        modals.REASON_BLOCK_ID: {
            modals.REASON_ACTION_ID: {"type": "plain_text_input", "value": reason}
        }
    }
    if message is not None:
        values[decision_modal.MESSAGE_BLOCK_ID] = {
            decision_modal.MESSAGE_ACTION_ID: {"type": "plain_text_input", "value": message}
        }
    context = modals.ModalContext(approval_id="ap_1", action=action, channel_id="C1")  # type: ignore[arg-type]
    return {
        "type": "view_submission",
        "user": {"id": "U2"},
        "view": {
            "callback_id": decision_modal.DECISION_CALLBACK_ID,
            "private_metadata": modals.encode_modal_context(context),
            "state": {"values": values},
        },
    }


def test_a_reject_submission_carries_reason_and_message() -> None:
    parsed = decision_modal.parse_decision_submission(
        _submission("reject", " risky ", " not today ")
    )
    assert parsed == decision_modal.DecisionSubmission(
        approval_id="ap_1",
        action="reject",
        channel_id="C1",
        user_id="U2",
        reason="risky",
        message="not today",
    )


def test_an_approve_submission_never_carries_a_message() -> None:
    parsed = decision_modal.parse_decision_submission(_submission("approve", "ok", "ignored"))
    assert isinstance(parsed, decision_modal.DecisionSubmission)
    assert parsed.message is None


@pytest.mark.parametrize("reason", [None, "   ", "x" * (modals.MAX_REASON_CHARS + 1)])
def test_a_missing_or_long_reason_is_an_inline_error(reason: str | None) -> None:
    parsed = decision_modal.parse_decision_submission(_submission("approve", reason))
    assert isinstance(parsed, modals.InvalidSubmission)
    assert set(parsed.errors) == {modals.REASON_BLOCK_ID}


def test_foreign_private_metadata_is_refused() -> None:
    body = _submission("approve", "ok")
    body["view"]["private_metadata"] = "delete|everything"
    with pytest.raises(InputError, match="not ours"):
        decision_modal.parse_decision_submission(body)


def _message(**fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "channel": "C1",
        "user": "U1",
        "text": "more",
        "ts": "2.0",
        "thread_ts": "1.0",
        **fields,
    }


def test_a_human_thread_reply_is_parsed() -> None:
    assert app.parse_thread_reply(_message(), bot_user_id="UBOT") == app.ThreadReply(
        channel_id="C1", thread_ts="1.0", user_id="U1", text="more", ts="2.0"
    )


@pytest.mark.parametrize(
    "event",
    [
        _message(bot_id="B1"),
        _message(subtype="message_changed"),
        _message(user="UBOT"),
        _message(thread_ts=None),
        _message(ts="1.0"),  # the thread root itself
        _message(text="  "),
    ],
)
def test_messages_the_bot_ignores(event: dict[str, Any]) -> None:
    assert app.parse_thread_reply(event, bot_user_id="UBOT") is None


GOOD_ENV = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}


def test_settings_defaults() -> None:
    settings = load_settings(GOOD_ENV)
    assert (settings.api_url, settings.host, settings.port) == (
        "https://slack.com/api/",
        "127.0.0.1",
        3000,
    )
    assert "xoxb-1" not in repr(settings)


@pytest.mark.parametrize(
    ("env", "mode", "variable"),
    [
        ({"SLACK_SIGNING_SECRET": "s"}, "http", "SLACK_BOT_TOKEN is not set"),
        (
            {**GOOD_ENV, "SLACK_BOT_TOKEN": "xoxp-1"},
            "http",
            "SLACK_BOT_TOKEN must start with 'xoxb-'",
        ),
        ({"SLACK_BOT_TOKEN": "xoxb-1"}, "http", "SLACK_SIGNING_SECRET is not set"),
        (GOOD_ENV, "socket", "SLACK_APP_TOKEN is not set"),
        ({**GOOD_ENV, "PORT": "http"}, "http", "PORT must be a number"),
        ({**GOOD_ENV, "PORT": "70000"}, "http", "PORT must be a number"),
        ({**GOOD_ENV, "SLACK_API_URL": "ftp://x"}, "http", "SLACK_API_URL must be an http"),
        ({**GOOD_ENV, "APPROVALS_AGENTS": "nocolon"}, "http", "APPROVALS_AGENTS must look like"),
        ({**GOOD_ENV, "HOST": "bad host!"}, "http", "HOST must be an IP address or host name"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], mode: str, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_settings(env, mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", ["0.0.0.0", "::1", "localhost", "bot-1.internal.example"])
def test_hosts_that_are_accepted(host: str) -> None:
    assert load_settings({**GOOD_ENV, "HOST": host}).host == host


def test_api_url_gets_its_trailing_slash() -> None:
    settings = load_settings({**GOOD_ENV, "SLACK_API_URL": "http://127.0.0.1:9/api"})
    assert settings.api_url == "http://127.0.0.1:9/api/"


def test_the_modal_context_carries_the_digest_the_modal_showed() -> None:
    shown = "ab" * 32
    for channel in ("C1", None):
        context = modals.ModalContext(
            approval_id="ap_1", action="approve", channel_id=channel, digest=shown
        )
        assert modals.decode_modal_context(modals.encode_modal_context(context)) == context
    legacy = modals.decode_modal_context("approve|ap_1|C1")  # a modal opened before
    assert (legacy.channel_id, legacy.digest) == ("C1", None)
    with pytest.raises(InputError, match="no valid digest"):
        modals.decode_modal_context("approve|ap_1|C1|not-a-digest")


def test_socket_mode_needs_the_app_token_but_no_signing_secret() -> None:
    """Slack signs nothing over Socket Mode: the app-level token authenticates it."""
    settings = load_settings(
        {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}, mode="socket"
    )
    assert settings.app_token == "xapp-1"
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN must start with 'xapp-'"):
        load_settings({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"}, mode="socket")


def test_operator_commands_reach_slack_only_with_a_bot_token() -> None:
    assert web_api_from_env({}) is None
    assert web_api_from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": "http://h/api"}) == (
        "xoxb-1",
        "http://h/api/",
    )
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN must start with 'xoxb-'"):
        web_api_from_env({"SLACK_BOT_TOKEN": "xapp-1"})
