"""Uncertain calls and the last check before a call runs, without killing a process.

A dispatch that a dead worker left without a result is made by claiming the call's
execution key in the ledger directly (what the dead worker did before it died)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.errors import InputError, ResolutionError, UnknownCallError
from bot.runtime import AbortCall, RetryCall
from bot.runtime.decisions import ABORTED_MESSAGE
from bot.runtime.journal import InMemoryJournal, Recorded
from bot.service.last_check import ServiceJournal
from tests.service.service_harness import (
    APPROVER,
    Harness,
    kinds,
    paused_with_an_uncertain_restart,
    start,
)
from tests.states import dispatched_by_a_dead_worker


async def test_abort_tells_the_model_and_runs_nothing(harness: Harness) -> None:
    run_id = await paused_with_an_uncertain_restart(harness)

    await harness.service.reconcile(
        run_id, actor="U-operator", resolution=AbortCall(), reason="checked"
    )
    await harness.service.drain()

    assert harness.effect_lines() == []
    assert ABORTED_MESSAGE in harness.notifier.answer(run_id)
    assert "reconciled" in await kinds(harness, run_id)


async def test_retry_runs_the_call_again(harness: Harness) -> None:
    run_id = await paused_with_an_uncertain_restart(harness)

    await harness.service.reconcile(run_id, actor="U-operator", resolution=RetryCall())
    await harness.service.drain()

    [effect] = harness.effect_lines()
    assert effect["tool"] == "restart_service"
    done = await harness.store.get_run(run_id)
    assert done is not None
    assert done.status == "completed"


async def test_bad_reconciliations_are_named_and_change_nothing(harness: Harness) -> None:
    run_id = await paused_with_an_uncertain_restart(harness)

    not_a_resolution: Any = "retry and abort"
    with pytest.raises(InputError, match="a VerifiedResult, RetryCall or AbortCall, not str"):
        await harness.service.reconcile(run_id, actor="U-operator", resolution=not_a_resolution)
    with pytest.raises(UnknownCallError, match="no uncertain call 'nope'"):
        await harness.service.reconcile(
            run_id, actor="U-operator", call="nope", resolution=AbortCall()
        )
    with pytest.raises(InputError, match="no run with id"):
        await harness.service.reconcile("missing", actor="U-operator", resolution=AbortCall())

    still = await harness.store.get_run(run_id)
    assert still is not None
    assert still.status == "paused"  # the failed attempt put the claim back
    assert "reconciled" not in await kinds(harness, run_id)


async def test_only_a_paused_run_can_be_reconciled(harness: Harness) -> None:
    run = await harness.service.start_run(
        agent_name=None, task="status api", requester="U-x", channel="C-ops"
    )
    with pytest.raises(ResolutionError, match="is completed"):
        await harness.service.reconcile(run.run_id, actor="U-operator", resolution=AbortCall())


async def test_a_call_revoked_after_the_resume_began_is_not_run(harness: Harness) -> None:
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    outcome = await harness.store.decide(
        approval.approval_id, decision="approved", decider=APPROVER, reason="ok"
    )
    inner = InMemoryJournal()
    journal = ServiceJournal(
        inner,
        store=harness.store,
        run_id=run.run_id,
        actor="service:test",
        approvals={approval.execution_key: outcome.record},
    )
    await harness.store.revoke(approval.approval_id, actor="U-security", reason="incident")

    state = await harness.service.load_state(run.run_id)
    [call] = state.get_interruptions()
    claim = await journal.claim(
        execution_key=call.execution_key,
        arguments_digest=state.call_digest(call),
        run_id=run.run_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
    )

    assert claim == Recorded(result="Not run: its approval is revoked.", is_error=True)
    assert (
        await inner.claim(  # nothing was journaled for the key
            execution_key=call.execution_key,
            arguments_digest=state.call_digest(call),
            run_id=run.run_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
        )
        != claim
    )
    assert "execution_refused" in await kinds(harness, run.run_id)


async def test_a_call_approved_before_a_turn_stopped_is_checked_again_when_it_resumes(
    harness: Harness,
) -> None:
    """`restart` (manual) is left uncertain by a dead worker, so the turn stops before
    the approved `deploy`; `deploy`'s approval is revoked while the run waits. The
    stored state holds `deploy` approved, but its row decides: it never runs."""
    run = await start(harness, "restart api and deploy payments 1.2.3")
    state = await harness.service.load_state(run.run_id)
    restart, _ = state.get_interruptions()
    await dispatched_by_a_dead_worker(harness.store, state, restart)
    for approval in await harness.pending(run.run_id):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="go"
        )
    await harness.service.drain()
    [deploy] = [
        a for a in await harness.store.list_approvals(run_id=run.run_id)
        if a.tool_name == "deploy_release"
    ]  # fmt: skip
    assert deploy.status == "approved"
    assert harness.effect_lines() == []  # stopped at the uncertain restart

    await harness.service.revoke(deploy.approval_id, actor=APPROVER, reason="changed my mind")
    await harness.service.drain()  # the revocation resumes it: it waits on `restart` again
    await harness.service.reconcile(run.run_id, actor="U-operator", resolution=AbortCall())
    await harness.service.drain()

    assert harness.effect_lines() == []  # the revoked deploy did not run
    [refused] = [
        e for e in await harness.store.audit_events(run_id=run.run_id)
        if e.kind == "execution_refused"
    ]  # fmt: skip
    assert refused.detail["tool"] == "deploy_release"
