"""The policy file: parsing, defaults, every start-up error, and eligibility."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.policy.durations import parse_duration
from bot.policy.eligibility import Eligible, NoGroups, NotEligible, is_eligible
from bot.policy.loading import load_policy, parse_policy
from bot.policy.rules import (
    DEFAULT_POLICY,
    SLACK_GROUP_ID,
    SLACK_USER_ID,
    Limits,
    PolicyError,
    ToolRule,
)

EXAMPLE = """
admins = ["USECURITY"]

[defaults]
approvers = []
required_approvals = 1
allow_self_approval = false
require_reason = true
expires_after = "24h"
remind_before = "1h"

[tools.deploy_release]
approvers = ["SRELEASE"]
required_approvals = 2
expires_after = "2h"

[tools.set_config]
approvers = ["UALICE", "UBOB"]
require_reason = false
remind_before = "0s"
"""


class Groups:
    def __init__(self, members: dict[str, frozenset[str]]) -> None:
        self.members_by_group = members

    async def members(self, group_id: str) -> frozenset[str]:
        return self.members_by_group.get(group_id, frozenset())


def test_without_a_file_the_built_in_defaults_apply() -> None:
    policy = load_policy(None, environ={})
    assert policy is DEFAULT_POLICY
    rule = policy.rule_for("anything")
    assert rule == ToolRule()
    assert (rule.approvers, rule.required_approvals, rule.allow_self_approval) == ((), 1, False)
    assert (rule.require_reason, rule.expires_after, rule.remind_before) == (
        True,
        timedelta(hours=24),
        timedelta(hours=1),
    )
    assert policy.admins == frozenset()


def test_the_example_file_parses_and_tool_rules_override_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    policy = load_policy(None, environ={"APPROVALS_POLICY": str(path)})
    assert policy.source == str(path)
    assert policy.is_admin("USECURITY")
    assert not policy.is_admin("UALICE")
    deploy = policy.rule_for("deploy_release")
    assert deploy.group_approvers == ("SRELEASE",)
    assert (deploy.required_approvals, deploy.expires_after) == (2, timedelta(hours=2))
    assert deploy.remind_before == timedelta(hours=1)  # from the defaults
    config = policy.rule_for("set_config")
    assert config.user_approvers == frozenset({"UALICE", "UBOB"})
    assert config.require_reason is False
    assert not config.reminds
    assert policy.rule_for("restart_service") == policy.defaults


@pytest.mark.parametrize(
    ("text", "expected"),
    [("30s", 30), ("90m", 5400), ("2h", 7200), ("1d", 86400)],
)
def test_durations(text: str, expected: int) -> None:
    assert parse_duration(text) == timedelta(seconds=expected)


def test_one_duration_grammar_serves_the_policy_and_the_operator_commands() -> None:
    assert parse_duration("30 m") == timedelta(minutes=30)  # as `--since 30 m` always took
    assert parse_duration("0s", allow_zero=True) == timedelta(0)
    assert parse_duration("5000d", longest=None) == timedelta(days=5000)  # a look-back
    with pytest.raises(ValueError, match="write at most 3650d"):
        parse_duration("5000d")
    for text in ("1234567890s", "2h\n", "h", "2", "-1h", "1.5h"):
        with pytest.raises(ValueError, match="is not a duration"):
            parse_duration(text, allow_zero=True, longest=None)


@pytest.mark.parametrize(
    ("text", "user", "group"),
    [
        ("U024BE7LH", True, False),
        ("W012A3CDE", True, False),
        ("S0RELEASE", False, True),
        ("UAB", True, False),
        ("U" + "A" * 30, True, False),
        ("U" + "A" * 31, False, False),  # the bound: no Slack id is that long
        ("S" + "A" * 31, False, False),
        ("U024BE7LH\n", False, False),  # matched whole, not up to a line end
        (" U024BE7LH", False, False),
        ("u024be7lh", False, False),
        ("C0123456789", False, False),
        ("U1", False, False),
    ],
)
def test_slack_ids_are_matched_whole_within_one_bound(text: str, user: bool, group: bool) -> None:
    assert (SLACK_USER_ID.fullmatch(text) is not None) == user
    assert (SLACK_GROUP_ID.fullmatch(text) is not None) == group


@pytest.mark.parametrize(
    ("toml", "key", "problem"),
    [
        ("surprise = 1", "surprise", "unknown key"),
        ("[defaults]\nexpire_after = '1h'", "defaults.expire_after", "unknown key"),
        ("[tools.x]\ncolour = 'red'", "tools.x.colour", "unknown key"),
        ("[defaults]\nexpires_after = '90 minutes'", "defaults.expires_after", "not a duration"),
        ("[defaults]\nexpires_after = '1w'", "defaults.expires_after", "not a duration"),
        ("[defaults]\nexpires_after = 3600", "defaults.expires_after", "not a duration"),
        ("[defaults]\nexpires_after = '0s'", "defaults.expires_after", "longer than zero"),
        ("[defaults]\nexpires_after = '99999999d'", "defaults.expires_after", "at most"),
        ("[tools.x]\nremind_before = '999999999h'", "tools.x.remind_before", "at most"),
        ("[defaults]\nremind_before = '-1h'", "defaults.remind_before", "not a duration"),
        ("[defaults]\nrequired_approvals = 0", "defaults.required_approvals", ">= 1"),
        ("[defaults]\nrequired_approvals = '2'", "defaults.required_approvals", ">= 1"),
        ("[defaults]\nrequire_reason = 'yes'", "defaults.require_reason", "true or false"),
        ("[defaults]\napprovers = 'UALICE'", "defaults.approvers", "list of Slack ids"),
        ("[defaults]\napprovers = ['alice']", "defaults.approvers", "not a Slack id"),
        ("[defaults]\napprovers = ['UALICE', 'UALICE']", "defaults.approvers", "twice"),
        (f"[defaults]\napprovers = ['U{'A' * 31}']", "defaults.approvers", "not a Slack id"),
        ("admins = ['SGROUP']", "admins", "not a Slack id"),
        ("allow_external_users = 'no'", "allow_external_users", "true or false"),
        ('admins = ["U0ADMIN\\n"]', "admins", "'U0ADMIN\\n' is not a Slack id"),
        ('[defaults]\napprovers = ["U0ALICE\\n"]', "defaults.approvers", "not a Slack id"),
        ("[limits]\ntool_calls_per_turn = 0", "limits.tool_calls_per_turn", ">= 1"),
        ("[limits]\ntool_calls_per_turn = '20'", "limits.tool_calls_per_turn", ">= 1"),
        ("[limits]\npending_approvals_per_run = 2.5", "limits.pending_approvals_per_run", ">= 1"),
        ("[limits]\npending_approvals_per_run = 1001", "limits.pending_approvals_per_run", "1000"),
        ("[limits]\ntool_calls_per_turn = true", "limits.tool_calls_per_turn", ">= 1"),
        ("[limits]\ntask_chars = 40001", "limits.task_chars", "40000"),
        ("[limits]\ntask_characters = 10", "limits.task_characters", "unknown key"),
        ("limits = 3", "limits", "must be a table"),
        ("defaults = 3", "defaults", "must be a table"),
        (
            "[tools.deploy_release]\napprovers = ['UALICE']\nrequired_approvals = 2",
            "tools.deploy_release.required_approvals",
            "only 1 approver(s) listed",
        ),
        (
            "[defaults]\napprovers = ['UALICE']\n[tools.x]\nrequired_approvals = 2",
            "tools.x.required_approvals",
            "could never be approved",
        ),
    ],
)
def test_bad_files_name_the_file_the_key_and_the_problem(
    tmp_path: Path, toml: str, key: str, problem: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_policy(str(path))
    message = str(raised.value)
    assert message.startswith(f"policy file {path}: {key}: ")
    assert problem in message
    assert "\n" not in message  # one line, whatever the file holds


def test_limits_have_defaults_and_the_file_may_change_each() -> None:
    assert DEFAULT_POLICY.limits == Limits()
    assert (Limits().tool_calls_per_turn, Limits().pending_approvals_per_run) == (20, 20)
    assert Limits().task_chars == 4000
    policy = parse_policy("[limits]\ntool_calls_per_turn = 5\ntask_chars = 100")
    assert policy.limits == Limits(
        tool_calls_per_turn=5, pending_approvals_per_run=20, task_chars=100
    )


def test_external_users_are_refused_unless_the_file_allows_them() -> None:
    assert DEFAULT_POLICY.allow_external_users is False
    assert parse_policy(EXAMPLE).allow_external_users is False
    assert parse_policy("allow_external_users = true").allow_external_users is True


def test_a_group_makes_a_larger_quorum_possible() -> None:
    policy = parse_policy(
        "[tools.deploy_release]\napprovers = ['UALICE', 'SRELEASE']\nrequired_approvals = 3"
    )
    assert policy.rule_for("deploy_release").required_approvals == 3


def test_a_missing_file_and_bad_toml_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"policy file .*nope\.toml: cannot read it"):
        load_policy(str(tmp_path / "nope.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("[defaults\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.toml: not valid TOML"):
        load_policy(str(broken))


async def test_eligibility_by_listing_group_and_self_rule() -> None:
    groups = Groups({"SRELEASE": frozenset({"UCAROL"})})
    rule = ToolRule(approvers=("UALICE", "SRELEASE"))
    assert await is_eligible(rule, "UALICE", requester="UREQ", groups=groups) == Eligible(
        via="listed"
    )
    assert await is_eligible(rule, "UCAROL", requester="UREQ", groups=groups) == Eligible(
        via="SRELEASE"
    )
    outsider = await is_eligible(rule, "UMALLORY", requester="UREQ", groups=groups)
    assert isinstance(outsider, NotEligible)
    assert outsider.code == "not_an_approver"
    assert "SRELEASE" in outsider.reason
    own = await is_eligible(rule, "UALICE", requester="UALICE", groups=groups)
    assert isinstance(own, NotEligible)
    assert own.code == "self_approval"
    allowed = ToolRule(approvers=("UALICE",), allow_self_approval=True)
    assert isinstance(
        await is_eligible(allowed, "UALICE", requester="UALICE", groups=NoGroups()), Eligible
    )
    anyone = ToolRule()
    assert await is_eligible(anyone, "UX", requester="UREQ", groups=NoGroups()) == Eligible(
        via="anyone"
    )


def test_a_tool_no_agent_has_is_refused_at_start_up() -> None:
    policy = parse_policy("[tools.deploy_relase]\nrequired_approvals = 1", source="p.toml")
    policy.check_tools(["deploy_relase", "restart_service"])
    with pytest.raises(ConfigError) as raised:
        policy.check_tools(["deploy_release", "restart_service"])
    assert str(raised.value) == (
        "policy file p.toml: tools.deploy_relase: no agent has a tool named 'deploy_relase' "
        "(tools: deploy_release, restart_service)"
    )


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "many.toml"
    path.write_text(
        "surprise = 1\n"
        "admins = ['SGROUP', 'UOK']\n"
        "[defaults]\nexpires_after = '90 minutes'\nrequired_approvals = 0\n"
        "[tools.deploy_release]\napprovers = ['alice', 'UALICE']\nrequire_reason = 'yes'\n",
        encoding="utf-8",
    )
    with pytest.raises(PolicyError) as raised:
        load_policy(str(path))
    keys = [problem.split(":", 1)[0] for problem in raised.value.problems]
    assert keys == [
        "surprise",
        "admins",
        "defaults.required_approvals",
        "defaults.expires_after",
        "tools.deploy_release.approvers",
        "tools.deploy_release.require_reason",
    ]
    lines = str(raised.value).splitlines()
    assert lines[0] == f"policy file {path}: 6 problems:"
    assert len(lines) == 7


def test_allow_always_is_per_tool_and_only_with_a_quorum_of_one() -> None:
    policy = parse_policy("[tools.get_status]\nallow_always = true")
    assert policy.rule_for("get_status").allow_always
    assert not policy.rule_for("deploy_release").allow_always  # default false
    with pytest.raises(PolicyError) as raised:
        parse_policy(
            "[defaults]\nallow_always = true\n[tools.deploy_release]\nrequired_approvals = 2\n"
            "approvers = ['UALICE', 'UBOB']",
            source="p.toml",
        )
    [problem] = raised.value.problems
    assert problem.startswith("tools.deploy_release.allow_always: ")
    assert "required_approvals = 1" in problem


def test_unknown_tools_are_all_named_at_once() -> None:
    policy = parse_policy("[tools.a]\n[tools.b]", source="p.toml")
    with pytest.raises(PolicyError) as raised:
        policy.check_tools(["c"])
    assert [p.split(":", 1)[0] for p in raised.value.problems] == ["tools.a", "tools.b"]
