"""The `tool` label of the time-to-decision histogram is bounded by the configuration: a
name neither the policy nor a registered agent knows (an agent's or an upstream's
invention, a wordlist) is counted as `other`, never as a new series."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.metrics import Metrics
from bot.service.telemetry import OTHER_TOOL, Telemetry
from bot.service.waiting import elapsed_text
from store.records import ApprovalRecord

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def closed(tool_name: str, *, status: str = "approved", after: float = 30.0) -> ApprovalRecord:
    return ApprovalRecord(
        approval_id=f"ap_{tool_name}",
        run_id="run_1",
        tool_call_id="call_1",
        tool_name=tool_name,
        arguments_digest="0" * 64,
        snapshot="{}",
        status=status,  # type: ignore[arg-type]
        requester="U1",
        decider="U2",
        reason=None,
        message=None,
        created_at=START,
        decided_at=START + timedelta(seconds=after),
        expires_at=START + timedelta(days=1),
        revoked_at=None,
        slack_channel=None,
        slack_ts=None,
    )


def series(metrics: Metrics) -> set[tuple[str, str]]:
    return {
        (sample.labels["tool"], sample.labels["outcome"])
        for family in metrics.registry.collect()
        if family.name == "approvals_time_to_decision_seconds"
        for sample in family.samples
        if sample.name.endswith("_count")
    }


def test_unknown_tool_names_share_one_label() -> None:
    metrics = Metrics()
    telemetry = Telemetry(metrics, clock=lambda: START, known_tools=lambda: {"deploy_release"})
    telemetry.approval_closed(closed("deploy_release"))
    for guess in ("drop_database", "x" * 500, "deploy_release "):
        telemetry.approval_closed(closed(guess, status="rejected"))
    assert series(metrics) == {("deploy_release", "approved"), (OTHER_TOOL, "rejected")}


def test_a_revoked_call_waited_until_its_revocation() -> None:
    metrics = Metrics()
    telemetry = Telemetry(metrics, clock=lambda: START, known_tools=lambda: {"echo"})
    revoked = replace(
        closed("echo", status="revoked"), decided_at=None, revoked_at=START + timedelta(minutes=7)
    )
    telemetry.approval_closed(revoked)
    total = metrics.registry.get_sample_value(
        "approvals_time_to_decision_seconds_sum", {"tool": "echo", "outcome": "revoked"}
    )
    assert total == 420.0


def test_a_wait_in_words() -> None:
    assert [elapsed_text(s) for s in (0, 59.9, 60, 3599, 3600, 3900, 86400, 97200)] == [
        "0 s", "59 s", "1 min", "59 min", "1 h", "1 h 5 min", "1 d", "1 d 3 h",
    ]  # fmt: skip
