"""Bulk decisions through the real service and store: each selected call is its own
ballot through the single decision's checks, and one that fails is refused (audited)
while the others go on; a selection no bulk decision takes changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ArgumentsUnreadError, InputError, NotAuthorizedError, ResolutionError
from bot.service.bulk import BULK_LIMIT, BulkItem
from store.records import ApprovalRecord
from tests.service.governance_helpers import ALICE, BOB, MALLORY, audit_of, governed
from tests.service.service_harness import REQUESTER, Harness, start
from tests.service.test_full_reading import shell_registry
from tests.service.test_sealed_snapshots import show_instead, write_directly


def item(approval: ApprovalRecord, digest: str | None = None) -> BulkItem:
    return BulkItem(approval_id=approval.approval_id, digest=digest or approval.arguments_digest)


async def pending_of(harness: Harness, *tasks: str) -> list[ApprovalRecord]:
    found = []
    for task in tasks:
        run = await start(harness, task)
        found += await harness.pending(run.run_id)
    return found


async def test_each_call_is_checked_alone_and_the_others_go_on(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    first, second, third = await pending_of(harness, "restart api", "restart web", "restart db")
    deploy = (await pending_of(harness, "deploy payments 1.2.3"))[0]
    stale = "0" * 64

    result = await harness.service.decide_many(
        tool_name="restart_service",
        items=[item(first), item(second, stale), item(third), item(deploy)],
        approve=True,
        decider=ALICE,
        reason="maintenance window",
    )

    assert sorted(r.approval.approval_id for r in result.decided) == sorted(
        [first.approval_id, third.approval_id]
    )
    refused = {r.approval_id: r.error for r in result.refused}
    assert isinstance(refused[second.approval_id], ResolutionError)  # not the digest shown
    assert isinstance(refused[deploy.approval_id], InputError)  # another tool
    assert "not of restart_service" in str(refused[deploy.approval_id])
    await harness.service.drain()
    assert len(harness.effect_lines()) == 2
    for approval in (first, third):
        [decided] = await audit_of(harness, approval.run_id, "decided")
        assert (decided["actor"], decided["via"]) == (ALICE, "slack-bulk")
    [why] = await audit_of(harness, second.run_id, "refused")
    assert why["why"] == "stale_digest"
    [why] = await audit_of(harness, deploy.run_id, "refused")
    assert why["why"] == "other_tool"


async def test_self_approval_eligibility_and_quorum_hold_per_call(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    one, two = await pending_of(harness, "deploy payments 1.2.3", "deploy ledger 2.0.0")
    items = [item(one), item(two)]

    outsider = await harness.service.decide_many(
        tool_name="deploy_release", items=items, approve=True, decider=MALLORY, reason="go"
    )
    assert outsider.decided == ()
    assert all(isinstance(r.error, NotAuthorizedError) for r in outsider.refused)
    own = await harness.service.decide_many(
        tool_name="deploy_release", items=items, approve=True, decider=REQUESTER, reason="mine"
    )
    assert all("you requested this run" in str(r.error) for r in own.refused)

    counted = await harness.service.decide_many(
        tool_name="deploy_release", items=items, approve=True, decider=ALICE, reason="ok"
    )
    assert [r.approval.status for r in counted.decided] == ["pending", "pending"]  # 1 of 2
    again = await harness.service.decide_many(
        tool_name="deploy_release", items=items, approve=True, decider=ALICE, reason="ok"
    )
    assert all("already voted" in str(r.error) for r in again.refused)
    closed = await harness.service.decide_many(
        tool_name="deploy_release", items=items, approve=True, decider=BOB, reason="ok"
    )
    assert [r.approval.status for r in closed.decided] == ["approved", "approved"]


async def test_a_call_not_read_whole_is_refused_and_the_read_one_approved(
    open_harness: Callable[..., Any],
) -> None:
    ran: list[str] = []
    harness: Harness = await open_harness(registry=shell_registry(ran))
    calls = []
    for task in ("clean up", "clean up again"):
        run = await harness.service.start_run(
            agent_name=None, task=task, requester=REQUESTER, channel="C-ops"
        )
        calls += await harness.pending(run.run_id)
    read, unread = calls
    await harness.service.read_in_full(read.approval_id, viewer=ALICE, digest=read.arguments_digest)

    result = await harness.service.decide_many(
        tool_name="run_command",
        items=[item(read), item(unread)],
        approve=True,
        decider=ALICE,
        reason="checked",
    )

    assert [r.approval.status for r in result.decided] == ["approved"]
    [refusal] = result.refused
    assert refusal.approval_id == unread.approval_id
    assert isinstance(refusal.error, ArgumentsUnreadError)
    await harness.service.drain()
    assert len(ran) == 1
    assert await harness.pending(unread.run_id) == [unread]


@pytest.mark.parametrize(
    ("selection", "reason", "problem"),
    [
        ("none", "ok", "select at least one call"),
        ("twice", "ok", "selected twice"),
        ("too_many", "ok", f"at most {BULK_LIMIT} calls"),
        ("one", "  ", "needs a reason"),
    ],
)
async def test_a_selection_no_bulk_decision_takes_changes_nothing(
    open_harness: Callable[..., Any], selection: str, reason: str, problem: str
) -> None:
    harness = await governed(open_harness)
    [approval] = await pending_of(harness, "restart api")
    items = {
        "none": [],
        "twice": [item(approval), item(approval)],
        "too_many": [item(approval)]
        + [BulkItem(approval_id=f"ap-{n}", digest="0" * 64) for n in range(BULK_LIMIT)],
        "one": [item(approval)],
    }[selection]
    with pytest.raises(InputError, match=problem):
        await harness.service.decide_many(
            tool_name="restart_service", items=items, approve=True, decider=ALICE, reason=reason
        )
    assert await harness.pending(approval.run_id) == [approval]
    assert await audit_of(harness, approval.run_id, "refused") == []


async def test_a_call_whose_snapshot_was_rewritten_is_refused_and_the_others_approved(
    open_harness: Callable[..., Any], db_path: Path
) -> None:
    harness = await governed(open_harness)
    honest, rewritten = await pending_of(harness, "restart api", "restart web")
    write_directly(db_path, show_instead(rewritten.approval_id, '"web"', '"web-canary"'))

    result = await harness.service.decide_many(
        tool_name="restart_service",
        items=[item(honest), item(rewritten)],
        approve=True,
        decider=ALICE,
        reason="both look fine",
    )

    assert [r.approval.approval_id for r in result.decided] == [honest.approval_id]
    [refusal] = result.refused
    assert refusal.approval_id == rewritten.approval_id
    assert "failed its seal" in str(refusal.error)
    [tampered] = await audit_of(harness, rewritten.run_id, "tamper_detected")
    assert tampered["purpose"] == "snapshot_seal"
    await harness.service.drain()
    assert len(harness.effect_lines()) == 1
