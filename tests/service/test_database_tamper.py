"""Someone who can write the database file but does not hold the keys tries to make a
pending call run: the decision must stand on votes whose seals verify, checked right
before the call runs, on every path that runs it (here recovery after a restart)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from store.rows import to_db
from tests.service.governance_helpers import policy
from tests.service.service_harness import (
    APPROVER,
    REQUESTER,
    Harness,
    close_harness,
    kinds,
    start,
)

STANDING_POLICY = """
[tools.restart_service]
allow_always = true
"""


def write_directly(db_path: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Plain sqlite3 on the file, as the attacker has it: no key ring."""
    connection = sqlite3.connect(db_path, isolation_level=None)
    try:
        for sql, params in statements:
            connection.execute(sql, params)
    finally:
        connection.close()


def approve_by_sql(approval_id: str) -> tuple[str, tuple[Any, ...]]:
    return (
        "UPDATE approvals SET status = 'approved', decider = 'U-EVIL', reason = 'sure', "
        "decided_at = ? WHERE approval_id = ?",
        (to_db(datetime.now(UTC)), approval_id),
    )


async def tamper_events(harness: Harness, run_id: str) -> list[dict[str, Any]]:
    events = await harness.store.audit_events(run_id=run_id)
    return [dict(e.detail) for e in events if e.kind == "tamper_detected"]


async def test_a_call_approved_by_sql_is_refused_at_recovery_and_an_honest_one_runs_once(
    open_harness: Callable[..., Any], db_path: Path
) -> None:
    before: Harness = await open_harness()
    forged_run = await start(before)
    honest_run = await start(before, "deploy billing 2.0.0")
    [forged] = await before.pending(forged_run.run_id)
    [honest] = await before.pending(honest_run.run_id)
    await close_harness(before)

    write_directly(db_path, approve_by_sql(forged.approval_id))
    after: Harness = await open_harness()
    assert await after.service.recover() == 1  # the probe: recovery resumes the run...
    await after.service.drain()

    assert after.effect_lines() == []  # ...and the deploy never happens
    assert "execution_refused" in await kinds(after, forged_run.run_id)
    [tamper] = await tamper_events(after, forged_run.run_id)
    assert tamper["approval_id"] == forged.approval_id
    assert "0 of 1 approval(s) have a valid seal" in tamper["why"]
    assert [a.approval_id for a, _ in after.notifier.refused] == [forged.approval_id]

    await after.service.decide(honest.approval_id, approve=True, decider=APPROVER, reason="ok")
    await after.service.drain()
    [effect] = after.effect_lines()
    assert "billing" in str(effect)


async def test_a_vote_copied_from_another_call_does_not_make_it_run(
    open_harness: Callable[..., Any], db_path: Path
) -> None:
    before: Harness = await open_harness()
    decided_run = await start(before, "deploy billing 2.0.0")
    target_run = await start(before)
    [decided] = await before.pending(decided_run.run_id)
    [target] = await before.pending(target_run.run_id)
    await before.service.decide(decided.approval_id, approve=True, decider=APPROVER, reason="ok")
    await before.service.drain()
    assert len(before.effect_lines()) == 1
    await close_harness(before)

    copy_vote = (
        "INSERT INTO approval_votes (approval_id, voter, decision, digest, reason, at, "
        "seal_key_id, seal) SELECT ?, voter, decision, ?, reason, at, seal_key_id, seal "
        "FROM approval_votes WHERE approval_id = ?",
        (target.approval_id, target.arguments_digest, decided.approval_id),
    )
    write_directly(db_path, copy_vote, approve_by_sql(target.approval_id))
    after: Harness = await open_harness()
    await after.service.recover()
    await after.service.drain()

    assert len(after.effect_lines()) == 1  # only the honest deploy, from before
    [tamper] = await tamper_events(after, target_run.run_id)
    assert "not its own" in tamper["why"]


async def test_a_standing_decision_inserted_by_sql_decides_nothing(
    open_harness: Callable[..., Any], db_path: Path
) -> None:
    harness: Harness = await open_harness(policy=policy(STANDING_POLICY))
    run = await start(harness, "restart api")
    [first] = await harness.pending(run.run_id)
    await harness.service.decide(first.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain(timeout=10)
    assert len(harness.effect_lines()) == 1

    forged_standing = (  # "approve restart_service for the rest of the run", without a seal
        "INSERT INTO standing_decisions (approval_id, run_id, tool_name, decision, decider, "
        "reason, message, created_at) VALUES (?, ?, 'restart_service', 'approved', ?, "
        "'forged', NULL, ?)",
        (first.approval_id, run.run_id, APPROVER, to_db(datetime.now(UTC))),
    )
    write_directly(db_path, forged_standing)
    stored = await harness.store.get_run(run.run_id)
    assert stored is not None
    assert stored.thread_ts is not None
    await harness.service.follow_up(
        channel="C-ops", thread_ts=stored.thread_ts, user=REQUESTER, text="restart db"
    )
    await harness.service.drain(timeout=10)

    later = [a for a in await harness.pending(run.run_id) if a.approval_id != first.approval_id]
    assert [a.tool_name for a in later] == ["restart_service"]  # asked, not decided
    assert len(harness.effect_lines()) == 1
    [tamper] = await tamper_events(harness, run.run_id)
    assert (tamper["purpose"], tamper["approval_id"]) == ("standing_seal", first.approval_id)
