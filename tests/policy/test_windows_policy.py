"""The policy keys of approval windows (`allow_window`, `window_match`) and audit-only
tools (`mode`): read, checked together with the rest, and reported by `policy check`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.commands.policy import describe, rule_json
from bot.policy.loading import parse_policy
from bot.policy.rules import PolicyError


def test_a_window_and_its_match_fields_are_per_tool() -> None:
    policy = parse_policy(
        '[tools.restart_service]\nallow_window = "2h"\nwindow_match = ["service"]\n'
        '[tools.read_logs]\nmode = "audit"\n'
    )
    rule = policy.rule_for("restart_service")
    assert (rule.allow_window, rule.window_match, rule.mode) == (
        timedelta(hours=2),
        ("service",),
        "approve",
    )
    other = policy.rule_for("deploy_release")
    assert (other.allow_window, other.window_match, other.mode) == (None, (), "approve")
    assert policy.rule_for("read_logs").mode == "audit"
    assert "approval windows of 2h matching service" in describe(rule)
    assert "audit only" in describe(policy.rule_for("read_logs"))
    assert rule_json(rule)["allow_window"] == "2h"
    assert rule_json(rule)["window_match"] == ["service"]


def test_every_problem_of_the_new_keys_is_named_at_once() -> None:
    text = (
        '[tools.a]\nallow_window = "2d"\n'
        '[tools.b]\nallow_window = "1h"\nwindow_match = ["service", "service"]\n'
        '[tools.c]\nallow_window = "1h"\nrequired_approvals = 2\napprovers = ["S0GROUP"]\n'
        '[tools.d]\nwindow_match = ["service"]\n'
        '[tools.e]\nmode = "watch"\n'
        '[tools.f]\nmode = "audit"\nallow_window = "1h"\n'
        '[tools.g]\nallow_window = "soon"\n'
        '[tools.h]\nwindow_match = "service"\nallow_window = "1h"\n'
    )
    with pytest.raises(PolicyError) as raised:
        parse_policy(text, source="p.toml")
    keys = [problem.split(":", 1)[0] for problem in raised.value.problems]
    assert keys == [
        "tools.a.allow_window",
        "tools.b.window_match",
        "tools.c.allow_window",
        "tools.d.window_match",
        "tools.e.mode",
        "tools.f.mode",
        "tools.g.allow_window",
        "tools.h.window_match",
    ]
    text_of = dict(p.split(": ", 1) for p in raised.value.problems)
    assert "at most 1d" in text_of["tools.a.allow_window"]
    assert "one person's decision" in text_of["tools.c.allow_window"]
    assert "allow_window is not set" in text_of["tools.d.window_match"]


def test_a_window_under_the_defaults_is_refused_where_a_tool_needs_a_quorum() -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy('[defaults]\nallow_window = "1h"\n[tools.x]\nrequired_approvals = 2\n'
                     'approvers = ["S0GROUP"]\n')  # fmt: skip
    assert [p.split(":", 1)[0] for p in raised.value.problems] == ["tools.x.allow_window"]
