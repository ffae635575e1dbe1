"""Pinning to the bot's own workspace: what auth.test says, and which requests carry
another team, enterprise or app (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.errors import ConfigError
from bot.slack.workspace import Foreign, Workspace, find_foreign, workspace_from_auth_test

OURS = Workspace(team_id="T0OURS", enterprise_id=None, app_id="A0OURS", org_wide=False)
GRID = Workspace(team_id="T0OURS", enterprise_id="E0OURS", app_id="A0OURS", org_wide=False)
ORG_WIDE = Workspace(team_id=None, enterprise_id="E0OURS", app_id="A0OURS", org_wide=True)


def test_the_workspace_is_read_from_auth_test() -> None:
    answer = {
        "ok": True,
        "team_id": "T0OURS",
        "user_id": "UBOT",
        "bot_id": "BBOT",
        "app_id": "A0OURS",
        "is_enterprise_install": False,
    }
    assert workspace_from_auth_test(answer) == OURS
    grid = workspace_from_auth_test({**answer, "enterprise_id": "E0OURS"})
    assert grid == GRID
    org = workspace_from_auth_test(
        {**answer, "team_id": None, "enterprise_id": "E0OURS", "is_enterprise_install": True}
    )
    assert org == ORG_WIDE
    assert workspace_from_auth_test({**answer, "app_id": None}).app_id is None


@pytest.mark.parametrize(
    "answer",
    [
        {"ok": True},
        {"ok": True, "team_id": ""},
        {"ok": True, "is_enterprise_install": True, "team_id": "T1"},  # org-wide, no org
    ],
)
def test_auth_test_without_a_workspace_is_a_config_error(answer: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"auth\.test"):
        workspace_from_auth_test(answer)


def command(**fields: str) -> dict[str, Any]:
    return {
        "command": "/agent",
        "team_id": "T0OURS",
        "api_app_id": "A0OURS",
        "user_id": "U0REQ",
        "channel_id": "C0CHAN",
        **fields,
    }


def click(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions",
        "team": {"id": "T0OURS", "domain": "ours"},
        "user": {"id": "U0APP", "team_id": "T0OURS"},
        "api_app_id": "A0OURS",
        "channel": {"id": "C0CHAN"},
        "actions": [{"action_id": "approval_approve", "value": "ap1"}],
        "enterprise": None,
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = body
        for key in parents:
            target = target[key]
        target[leaf] = value
    return body


def submission(**changes: Any) -> dict[str, Any]:
    body = click(**changes)
    body["type"] = "view_submission"
    del body["actions"], body["channel"]
    body["view"] = {"callback_id": "approval_decision", "private_metadata": "approve|ap2|C0CHAN"}
    return body


def event(**fields: Any) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "team_id": "T0OURS",
        "api_app_id": "A0OURS",
        "event": {"type": "message", "user": "U0X", "channel": "C0CHAN", **fields},
    }


@pytest.mark.parametrize(
    "body",
    [
        command(),
        command(enterprise_id=""),
        click(),
        submission(),
        event(),
        event(user_team="T0OURS", source_team="T0OURS"),
        {"type": "url_verification", "challenge": "x"},
    ],
)
def test_requests_from_the_workspace_pass(body: dict[str, Any]) -> None:
    assert find_foreign(body, OURS, allow_external_users=False) is None


@pytest.mark.parametrize(
    ("body", "field", "user", "channel", "approval_id"),
    [
        (command(team_id="T0THEIRS"), "team_id", "U0REQ", "C0CHAN", None),
        (command(enterprise_id="E0THEIRS"), "enterprise_id", "U0REQ", "C0CHAN", None),
        (command(api_app_id="A0OTHER"), "api_app_id", "U0REQ", "C0CHAN", None),
        (click(team__id="T0THEIRS"), "team.id", "U0APP", "C0CHAN", "ap1"),
        (click(user__team_id="T0THEIRS"), "user.team_id", "U0APP", "C0CHAN", "ap1"),
        (click(enterprise={"id": "E0THEIRS"}), "enterprise.id", "U0APP", "C0CHAN", "ap1"),
        (submission(user__team_id="T0THEIRS"), "user.team_id", "U0APP", None, "ap2"),
        (submission(api_app_id="A0OTHER"), "api_app_id", "U0APP", None, "ap2"),
        (event(user_team="T0THEIRS"), "event.user_team", "U0X", "C0CHAN", None),
        (event(team="T0THEIRS"), "event.team", "U0X", "C0CHAN", None),
        ({**event(), "team_id": "T0THEIRS"}, "team_id", "U0X", "C0CHAN", None),
    ],
)
def test_another_team_enterprise_or_app_is_foreign(
    body: dict[str, Any], field: str, user: str, channel: str | None, approval_id: str | None
) -> None:
    found = find_foreign(body, OURS, allow_external_users=False)
    assert isinstance(found, Foreign)
    assert (found.field, found.user, found.channel, found.approval_id) == (
        field,
        user,
        channel,
        approval_id,
    )
    assert found.value != ""


def test_external_users_may_act_when_allowed_but_never_another_app() -> None:
    allowed = {"allow_external_users": True}
    assert find_foreign(click(user__team_id="T0THEIRS"), OURS, **allowed) is None
    assert find_foreign(command(enterprise_id="E0THEIRS"), OURS, **allowed) is None
    other_app = find_foreign(click(api_app_id="A0OTHER"), OURS, **allowed)
    assert other_app is not None
    assert other_app.field == "api_app_id"


def test_an_enterprise_pins_the_org_and_an_org_wide_install_only_the_org() -> None:
    own = click(enterprise={"id": "E0OURS"})
    assert find_foreign(own, GRID, allow_external_users=False) is None
    other_workspace = click(enterprise={"id": "E0OURS"}, user__team_id="T0SISTER")
    found = find_foreign(other_workspace, GRID, allow_external_users=False)
    assert found is not None
    assert found.field == "user.team_id"
    assert find_foreign(other_workspace, ORG_WIDE, allow_external_users=False) is None
    assert find_foreign(click(), GRID, allow_external_users=False) is None  # no org named
    outside = find_foreign(
        click(enterprise={"id": "E0THEIRS"}), ORG_WIDE, allow_external_users=False
    )
    assert outside is not None
    assert outside.field == "enterprise.id"


def test_without_an_app_id_from_auth_test_the_app_is_not_checked() -> None:
    unknown_app = Workspace(team_id="T0OURS", enterprise_id=None, app_id=None, org_wide=False)
    assert find_foreign(click(api_app_id="A0ANY"), unknown_app, allow_external_users=False) is None


@pytest.mark.parametrize(
    ("event_fields", "chatter"),
    [
        ({"ts": "2.0", "thread_ts": "1.0"}, False),  # a reply in a thread reaches an agent
        ({"ts": "2.0"}, True),  # channel talk the bot ignores anyway
        ({"ts": "2.0", "thread_ts": "1.0", "subtype": "message_changed"}, True),
        ({"ts": "2.0", "thread_ts": "1.0", "bot_id": "B0THEIRS"}, True),
    ],
)
def test_partner_chatter_is_refused_without_a_record(
    event_fields: dict[str, str], chatter: bool
) -> None:
    found = find_foreign(
        event(user_team="T0THEIRS", **event_fields), OURS, allow_external_users=False
    )
    assert found is not None
    assert found.chatter is chatter
    home = {**event(), "team_id": "T0THEIRS"}
    home["event"] = {"type": "app_home_opened", "user": "U0X"}
    assert find_foreign(home, OURS, allow_external_users=False).chatter is False  # type: ignore[union-attr]
