"""The way from a closing approval to its call's effect: the reads it does not repeat
(bench/approve_to_effect.py measures the time), and the checks that stay on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from store.records import RunLease
from tests.service.service_harness import APPROVER, REQUESTER, Harness, start

WATCHED = (
    "list_approvals",
    "run_approvals",
    "get_approval",
    "approval_and_run",
    "get_run",
    "decision_evidence",
    "ledger_claim",
)


def spy_on(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the watched store reads and writes, in the order they are called
    (the real store answers each)."""
    called: list[str] = []
    for name in WATCHED:
        real: Callable[..., Awaitable[Any]] = getattr(harness.store, name)

        async def noted(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            called.append(_name)
            return await _real(*args, **kwargs)

        monkeypatch.setattr(harness.store, name, noted)
    return called


async def test_the_way_to_the_effect_reads_the_rows_once_and_the_evidence_right_before(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    called = spy_on(harness, monkeypatch)

    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await harness.service.drain()

    assert len(harness.effect_lines()) == 1
    before_claim = called[: called.index("ledger_claim")]
    # The vote's own read of the approval and its run, in one read; the run's rows once,
    # with the newest request's seal checked on that read (the claimer's read, which the
    # resume's first try matches the calls with and takes the stretch's requester from);
    # the decision's evidence read right before the call (row, digest and seals).
    assert before_claim.count("approval_and_run") == 1
    assert before_claim.count("get_approval") == 0
    # The run's row besides: the runner's pause check, which the claim's cancel check
    # right after reuses; the resume's claim checks an operator's hold in its own
    # transaction.
    assert before_claim.count("get_run") == 1
    assert before_claim.count("run_approvals") == 1
    assert before_claim.count("list_approvals") == 0
    assert before_claim.count("decision_evidence") == 1
    assert before_claim[-1] == "decision_evidence"  # the last check, right before the claim
    after_claim = called[called.index("ledger_claim") :]
    assert "get_approval" in after_claim  # still looked at again once the claim is fresh


async def test_a_revocation_after_the_claimers_read_still_stops_the_call(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    real_claim = harness.store.claim_run

    async def claim_then_revoked(*args: Any, **kwargs: Any) -> RunLease | None:
        lease = await real_claim(*args, **kwargs)
        # Between the rows the claimer read and the resume's start.
        await harness.store.revoke(approval.approval_id, actor="U-security", reason="incident")
        return lease

    monkeypatch.setattr(harness.store, "claim_run", claim_then_revoked)

    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="go"
    )
    await harness.service.drain()

    assert result.resume_started
    assert harness.effect_lines() == []
    revoked = await harness.store.get_approval(approval.approval_id)
    assert revoked is not None
    assert revoked.status == "revoked"


async def test_a_hold_that_lands_right_before_the_resumes_claim_stops_it(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    real_claim = harness.store.claim_run

    async def held_then_claim(*args: Any, **kwargs: Any) -> RunLease | None:
        # After every read the decision made, right before the resume's claim.
        await harness.store.set_run_hold(run.run_id, actor="U-ops", reason="incident")
        return await real_claim(*args, **kwargs)

    monkeypatch.setattr(harness.store, "claim_run", held_then_claim)

    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="go"
    )
    await harness.service.drain()

    assert not result.resume_started
    assert harness.effect_lines() == []
    waiting = await harness.store.get_run(run.run_id)
    assert waiting is not None
    assert (waiting.status, waiting.held_by) == ("paused", "U-ops")
    assert await harness.store.run_lease(run.run_id) is None


async def test_a_cancellation_right_after_the_pause_check_still_stops_the_call(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim takes the run as the pause check read it; a cancellation committed
    after that read is still seen before the call (its approval revoked, the run's
    lease ended: the last check and the ledger's fenced claim refuse)."""
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    real_get_run = harness.store.get_run
    cancelled: list[str] = []

    async def read_then_cancelled(run_id: str) -> Any:
        found = await real_get_run(run_id)
        task = asyncio.current_task()
        in_resume = task is not None and task.get_name().startswith("resume:")
        if in_resume and not cancelled:  # the resume's first read: the pause check
            cancelled.append(run_id)
            await harness.service.cancel_run(run_id, actor=REQUESTER, reason="incident")
        return found

    monkeypatch.setattr(harness.store, "get_run", read_then_cancelled)

    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    await harness.service.drain()

    assert cancelled == [run.run_id]
    assert harness.effect_lines() == []
    final = await real_get_run(run.run_id)
    assert final is not None
    assert final.status == "cancelled"
