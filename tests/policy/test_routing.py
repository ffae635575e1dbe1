"""The routing keys of a rule: where the card goes, escalation steps, telling the
requester; every problem named by its key, at once, and nothing else changed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.policy.loading import parse_policy
from bot.policy.routing import EscalationStep, Routing
from bot.policy.rules import PolicyError, ToolRule


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as raised:
        parse_policy(text, source="p.toml")
    return list(raised.value.problems)


def test_the_defaults_route_as_before() -> None:
    rule = parse_policy("").rule_for("anything")
    assert rule.routing == Routing()
    assert (rule.routing.notify, rule.routing.max_dms, rule.routing.sends_dms) == (
        "channel", 10, False,
    )  # fmt: skip
    assert rule.routing.decided_in_channel


def test_routing_keys_are_read_per_tool_over_the_defaults() -> None:
    policy = parse_policy(
        """
        [defaults]
        approvers = ["S0OPS"]
        notify = "both"
        notify_requester = "dm"

        [tools.deploy_release]
        approvers = ["S0RELEASE"]
        notify = "dm"
        max_dms = 3
        escalate_after = "30m"
        escalate_to = ["S0ONCALL", "U0CTO"]

        [tools.drop_db]
        approvers = ["U0DBA1"]
        escalation = [{ after = "10m", to = ["S0DBA"] }, { after = "1h", to = ["U0CTO"] }]
        """
    )
    deploy = policy.rule_for("deploy_release").routing
    assert deploy == Routing(
        notify="dm",
        max_dms=3,
        escalation=(EscalationStep(after=timedelta(minutes=30), to=("S0ONCALL", "U0CTO")),),
        notify_requester="dm",
    )
    assert not deploy.decided_in_channel
    drop = policy.rule_for("drop_db")
    assert [step.after for step in drop.routing.escalation] == [
        timedelta(minutes=10), timedelta(hours=1),
    ]  # fmt: skip
    assert drop.escalation_ids() == frozenset({"S0DBA", "U0CTO"})
    assert policy.rule_for("other").routing.notify == "both"
    assert policy.rule_for("other") == ToolRule(
        approvers=("S0OPS",), routing=Routing(notify="both", notify_requester="dm")
    )


def test_every_routing_problem_is_named_at_once() -> None:
    found = problems(
        """
        [defaults]
        expires_after = "1h"

        [tools.a]
        notify = "email"
        notify_requester = "pager"
        max_dms = 0

        [tools.b]
        approvers = ["U0ALICE"]
        escalate_after = "2h"
        escalate_to = ["U0BOB"]

        [tools.c]
        approvers = ["U0ALICE"]
        escalate_after = "10m"

        [tools.d]
        approvers = ["U0ALICE"]
        escalation = [{ after = "30m", to = ["U0BOB"] }, { after = "20m", to = ["U0CAROL"] }]

        [tools.e]
        approvers = ["U0ALICE"]
        escalate_after = "10m"
        escalate_to = ["bob"]
        escalation = []

        [tools.f]
        notify = "dm"

        [tools.g]
        approvers = ["U0ALICE"]
        escalation = [{ after = "10m", to = [] }, { after = "20m" }]
        """
    )
    assert found == [
        "tools.a.notify: must be one of 'channel', 'dm', 'both'",
        "tools.a.notify_requester: must be one of 'thread', 'dm'",
        "tools.a.max_dms: must be a whole number from 1 to 100",
        "tools.b.escalation: step 1 comes after 2h, but the call expires after 1h: it "
        "could never fire",
        "tools.c.escalate_to: escalate_after and escalate_to go together",
        "tools.d.escalation[2]: each step must come later than the one before",
        "tools.e.escalation: write one step with escalate_after and escalate_to, or several "
        "with escalation = [...], not both",
        'tools.f.notify: "dm" sends the card to the tool\'s approvers, but anyone may approve '
        "it (approvers = []): name the approvers, or notify the channel",
        "tools.g.escalation[1].to: names nobody to escalate to",
    ]


def test_a_step_naming_something_other_than_slack_ids_is_refused() -> None:
    assert problems(
        '[tools.a]\napprovers = ["U0A1"]\nescalate_after = "1m"\nescalate_to = ["@bob"]\n'
    ) == [
        "tools.a.escalate_to: '@bob' is not a Slack id; use user ids (U…, W…) or user group "
        "ids (S…)"
    ]
    assert problems('[tools.a]\napprovers = ["U0A1"]\nescalation = ["30m"]\n') == [
        'tools.a.escalation: must be a list of tables: [{ after = "30m", to = ["S0ONCALL"] }, ...]'
    ]
