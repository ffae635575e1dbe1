"""Operator control through the real service: cancel (also mid-resume in another
process), resume a stuck run, standing decisions, runs kept to their surface, approval
ids, and approval metadata that says when the person decided."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError, ResolutionError
from bot.runtime import Agent, AgentRegistry, ScriptedModel, tool
from bot.service import Closed
from bot.service.asking import approval_ids
from bot.service.events import ApprovalRequested, RunCancelled, RunFailed
from tests.service.governance_helpers import Clock, Gate, audit_of, gated_registry, policy
from tests.service.service_harness import APPROVER, REQUESTER, Harness, kinds, start
from tests.states import own_state

STANDING_POLICY = """
[tools.restart_service]
allow_always = true

[tools.set_config]
allow_always = true
"""


# -- cancel ----------------------------------------------------------------------------


async def test_cancel_closes_the_cards_tells_the_thread_and_is_audited(harness: Harness) -> None:
    run = await start(harness, "deploy payments 1.2.3 and restart api")

    outcome = await harness.service.cancel_run(run.run_id, actor=REQUESTER, reason="wrong env")

    assert outcome.run.status == "cancelled"
    assert {a.status for a in outcome.closed} == {"revoked"}
    assert len(outcome.closed) == 2
    closed_cards = [a for a in harness.notifier.decided if a.status == "revoked"]
    assert [a.revoke_reason for a in closed_cards] == ["run cancelled: wrong env"] * 2
    [told] = harness.notifier.of(RunCancelled)
    assert (told.actor, told.reason) == (REQUESTER, "wrong env")
    [event] = await audit_of(harness, run.run_id, "cancelled")
    assert event["actor"] == REQUESTER
    assert event["via"] == "slack"
    assert harness.effect_lines() == []
    with pytest.raises(AlreadyDecidedError, match="already cancelled"):
        await harness.service.cancel_run(run.run_id, actor=REQUESTER, reason="again")


async def test_only_the_requester_or_an_admin_may_cancel_from_slack(
    open_harness: Callable[..., Any],
) -> None:
    harness: Harness = await open_harness(policy=policy('admins = ["UADMIN"]'))
    run = await start(harness)
    with pytest.raises(NotAuthorizedError, match="requester or an admin"):
        await harness.service.cancel_run(run.run_id, actor="UMALLORY", reason="mine now")
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert (refused["actor"], refused["action"]) == ("UMALLORY", "cancel")
    outcome = await harness.service.cancel_run(run.run_id, actor="UADMIN", reason="freeze")
    assert outcome.run.status == "cancelled"


async def test_a_cancel_mid_resume_in_another_process_stops_the_next_call(
    open_harness: Callable[..., Any], effects_path: Any
) -> None:
    """The resuming worker is not corrupted: its next call is refused, its final save
    loses the compare-and-set, the run stays cancelled and nobody is told it failed."""
    gate = Gate()
    worker: Harness = await open_harness(registry=gated_registry(gate, effects_path))
    operator: Harness = await open_harness(
        registry=gated_registry(Gate(), effects_path), surface="cli", worker_id="cli:op:1"
    )
    run = await start(worker, "go")
    for approval in await worker.pending(run.run_id):
        await worker.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="ok"
        )
    await asyncio.wait_for(gate.entered.wait(), timeout=10)  # `hold` runs in the resume

    outcome = await operator.service.cancel_run(run.run_id, actor="alice", reason="stop it")
    gate.release.set()
    await worker.service.drain(timeout=10)

    assert outcome.won
    # `hold` had started; the approved `launch` had not, so its approval closed
    assert [a.tool_name for a in outcome.closed] == ["launch"]
    assert gate.ran == ["hold"]  # `launch` never ran
    final = await worker.store.get_run(run.run_id)
    assert final is not None
    assert final.status == "cancelled"
    assert worker.notifier.of(RunFailed) == []
    trail = await kinds(worker, run.run_id)
    assert "cancelled" in trail
    assert trail.count("executed") == 1
    [cancelled] = await audit_of(worker, run.run_id, "cancelled")
    assert cancelled["via"] == "cli"


async def test_after_a_cancel_not_even_a_call_without_approval_runs(
    open_harness: Callable[..., Any],
) -> None:
    gate, ran = Gate(), []

    @tool(needs_approval=True)
    async def hold() -> str:
        gate.entered.set()
        await gate.release.wait()
        return "held"

    @tool
    async def note(text: str) -> str:
        ran.append(text)
        return "noted"

    script: list[Any] = [[("hold", {}), ("note", {"text": "after"})], "done"]
    agent = Agent(name="ops", instructions="-", tools=[hold, note], model=ScriptedModel(script))
    harness: Harness = await open_harness(registry=AgentRegistry([agent]))
    run = await start(harness, "go")
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await asyncio.wait_for(gate.entered.wait(), timeout=10)

    await harness.service.cancel_run(run.run_id, actor=REQUESTER, reason="stop")
    gate.release.set()
    await harness.service.drain(timeout=10)

    assert ran == []
    final = await harness.store.get_run(run.run_id)
    assert final is not None
    assert final.status == "cancelled"


# -- resume a stuck run ----------------------------------------------------------------


async def test_a_run_left_resuming_is_resumed_on_request(
    open_harness: Callable[..., Any],
) -> None:
    first: Harness = await open_harness()
    run = await start(first, "restart api")
    [approval] = await first.pending(run.run_id)
    await first.store.vote(
        approval.approval_id, decision="approved", voter=APPROVER, digest=approval.arguments_digest,
        reason="ok",
    )  # fmt: skip
    await first.store.transition_run(run.run_id, expected_status="paused", new_status="resuming")
    # the process that claimed the resume died here
    operator: Harness = await open_harness(surface="cli", worker_id="cli:op:2")

    await operator.service.resume_stuck(run.run_id, actor="alice")
    await operator.service.drain(timeout=10)

    done = await operator.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "completed"
    assert len(operator.effect_lines()) == 1
    [requested] = await audit_of(operator, run.run_id, "resume_requested")
    assert (requested["actor"], requested["via"]) == ("alice", "cli")


async def test_resume_is_refused_for_a_run_waiting_or_with_live_work(
    open_harness: Callable[..., Any],
) -> None:
    harness: Harness = await open_harness(surface="cli", worker_id="cli:op:3")
    slack: Harness = await open_harness()
    run = await start(slack, "restart api")
    with pytest.raises(InputError, match="waiting for 1 decision"):
        await harness.service.resume_stuck(run.run_id, actor="alice")
    [call] = (await own_state(slack.service, run.run_id)).get_interruptions()
    await slack.store.transition_run(run.run_id, expected_status="paused", new_status="resuming")
    await slack.store.ledger_claim(
        execution_key=call.execution_key, arguments_digest="x", run_id=run.run_id,
        tool_call_id=call.tool_call_id, tool_name=call.tool_name, owner="live-worker",
        lease_seconds=300,
    )  # fmt: skip
    with pytest.raises(ResolutionError, match="live-worker"):
        await harness.service.resume_stuck(run.run_id, actor="alice")
    done = await slack.store.get_run(run.run_id)
    assert done is not None
    assert done.status == "resuming"


# -- standing decisions ----------------------------------------------------------------


async def _standing(open_harness: Callable[..., Any]) -> Harness:
    harness: Harness = await open_harness(policy=policy(STANDING_POLICY))
    return harness


async def _follow_up(harness: Harness, run_id: str, text: str) -> None:
    run = await harness.store.get_run(run_id)
    assert run is not None
    assert run.thread_ts is not None
    await harness.service.follow_up(
        channel="C-ops", thread_ts=run.thread_ts, user=REQUESTER, text=text
    )
    await harness.service.drain(timeout=10)


async def test_a_standing_approval_decides_later_calls_of_the_tool_with_full_checks(
    open_harness: Callable[..., Any],
) -> None:
    harness = await _standing(open_harness)
    run = await start(harness, "restart api and restart web")
    first, second = await harness.pending(run.run_id)

    await harness.service.decide(
        first.approval_id, approve=True, decider=APPROVER, reason="rolling", always=True
    )
    await harness.service.drain(timeout=10)

    decided = {a.approval_id: a for a in await harness.store.list_approvals(run_id=run.run_id)}
    assert decided[second.approval_id].status == "approved"  # same turn, same tool
    assert decided[second.approval_id].decider == APPROVER
    assert "standing decision" in (decided[second.approval_id].reason or "")
    assert len(harness.effect_lines()) == 2

    await _follow_up(harness, run.run_id, "restart db")  # a later turn
    rows = await harness.store.list_approvals(run_id=run.run_id)
    assert [r.status for r in rows] == ["approved"] * 3
    assert len(harness.effect_lines()) == 3
    votes = await audit_of(harness, run.run_id, "decided")
    assert [v.get("via") for v in votes] == ["slack", "standing", "standing"]
    later_card = harness.notifier.of(ApprovalRequested)[-1]
    assert [d.tool_name for d in later_card.standing] == ["restart_service"]  # shown on it


async def test_revoking_the_standing_decision_makes_later_calls_ask_again(
    open_harness: Callable[..., Any],
) -> None:
    harness = await _standing(open_harness)
    run = await start(harness, "restart api")
    [first] = await harness.pending(run.run_id)
    await harness.service.decide(
        first.approval_id, approve=True, decider=APPROVER, reason="ok", always=True
    )
    await harness.service.drain(timeout=10)
    view = await harness.service.approval_view(first.approval_id, viewer=REQUESTER)
    assert view.standing is not None
    assert view.can_revoke  # after its own call ran: revoking ends the standing decision

    await harness.service.revoke(first.approval_id, actor=REQUESTER, reason="enough")
    await _follow_up(harness, run.run_id, "restart db")

    [waiting] = await harness.pending(run.run_id)
    assert waiting.tool_name == "restart_service"
    assert len(harness.effect_lines()) == 1
    done = await harness.store.get_approval(first.approval_id)
    assert done is not None
    assert done.status == "approved"  # the call that ran stays as it was
    assert "standing_revoked" in await kinds(harness, run.run_id)


async def test_standing_is_refused_where_the_policy_does_not_allow_it(
    open_harness: Callable[..., Any],
) -> None:
    harness = await _standing(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [deploy] = await harness.pending(run.run_id)
    view = await harness.service.approval_view(deploy.approval_id, viewer=APPROVER)
    assert not view.can_stand
    with pytest.raises(NotAuthorizedError, match="does not let a decision"):
        await harness.service.decide(
            deploy.approval_id, approve=True, decider=APPROVER, reason="x", always=True
        )
    [still] = await harness.pending(run.run_id)
    assert still.status == "pending"
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert refused["why"] == "standing_not_allowed"


async def test_a_standing_decision_does_not_let_its_decider_approve_their_own_call(
    open_harness: Callable[..., Any],
) -> None:
    """A thread reply's author is the requester of the calls it leads to: the standing
    decider asking for more does not get them approved in their own name."""
    harness = await _standing(open_harness)
    run = await start(harness, "restart api")
    [first] = await harness.pending(run.run_id)
    await harness.service.decide(
        first.approval_id, approve=True, decider=APPROVER, reason="ok", always=True
    )
    await harness.service.drain(timeout=10)
    current = await harness.store.get_run(run.run_id)
    assert current is not None
    assert current.thread_ts is not None
    await harness.service.follow_up(
        channel="C-ops", thread_ts=current.thread_ts, user=APPROVER, text="restart db"
    )
    await harness.service.drain(timeout=10)

    [waiting] = await harness.pending(run.run_id)
    assert waiting.requester == APPROVER
    assert len(harness.effect_lines()) == 1


async def test_a_standing_rejection_rejects_later_calls_with_its_message(
    open_harness: Callable[..., Any],
) -> None:
    harness = await _standing(open_harness)
    run = await start(harness, "set api mode=fast and set api level=9")
    first, second = await harness.pending(run.run_id)
    await harness.service.decide(
        first.approval_id,
        approve=False,
        decider=APPROVER,
        reason="no config changes today",
        message="Config is frozen.",
        always=True,
    )
    await harness.service.drain(timeout=10)
    rejected = await harness.store.get_approval(second.approval_id)
    assert rejected is not None
    assert rejected.status == "rejected"
    assert rejected.message == "Config is frozen."
    assert harness.effect_lines() == []
    assert harness.notifier.answer(run.run_id).count("Config is frozen.") == 2


# -- each surface its own runs ---------------------------------------------------------


async def test_the_bot_neither_lists_nor_decides_terminal_runs(
    open_harness: Callable[..., Any],
) -> None:
    terminal: Harness = await open_harness(surface="terminal")
    slack: Harness = await open_harness()
    operator: Harness = await open_harness(surface="cli", worker_id="cli:op:4")
    demo_run = await start(terminal)
    [approval] = await terminal.pending(demo_run.run_id)

    assert (await slack.service.pending_for(APPROVER)).items == ()
    with pytest.raises(InputError, match="started at the terminal"):
        await slack.service.decide(
            approval.approval_id, approve=True, decider=APPROVER, reason="sneaky"
        )
    with pytest.raises(InputError, match="started at the terminal"):
        await slack.service.approval_view(approval.approval_id, viewer=APPROVER)
    with pytest.raises(InputError, match="started at the terminal"):
        await slack.service.cancel_run(demo_run.run_id, actor=REQUESTER, reason="x")
    assert demo_run.origin == "terminal"

    result = await operator.service.decide(
        approval.approval_id, approve=True, decider=APPROVER, reason="from the cli"
    )
    assert result.approval.status == "approved"
    [decided] = await audit_of(operator, demo_run.run_id, "decided")
    assert decided["via"] == "cli"


async def test_operators_start_no_runs(open_harness: Callable[..., Any]) -> None:
    operator: Harness = await open_harness(surface="cli", worker_id="cli:op:5")
    with pytest.raises(InputError, match="operators do not start runs"):
        await operator.service.start_run(
            agent_name=None, task="restart api", requester=REQUESTER, channel=None
        )


# -- ids and times ---------------------------------------------------------------------


def test_approval_ids_are_random_readable_and_sort_in_the_model_order() -> None:
    ids = approval_ids(40)
    assert ids == sorted(ids)
    assert len(set(ids)) == 40
    for earlier, later in itertools.pairwise(ids):
        assert sum(a != b for a, b in zip(earlier, later, strict=True)) > 3
    assert all(set(i) <= set("0123456789abcdefghjkmnpqrstvwxyz-") for i in ids)


async def test_approval_metadata_records_when_the_person_decided(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness: Harness = await open_harness(clock=clock)
    run = await start(harness, "restart api and restart web")
    first, second = await harness.pending(run.run_id)
    await harness.service.decide(first.approval_id, approve=True, decider=APPROVER, reason="a")
    decided_first = clock.now
    clock.advance(minutes=30)
    await harness.service.decide(second.approval_id, approve=True, decider="U-other", reason="b")
    await harness.service.drain(timeout=10)

    state = await own_state(harness.service, run.run_id)
    stamps = {m.approver_id: m.timestamp for m in state.approval_metadata.values()}
    assert stamps == {APPROVER: decided_first, "U-other": decided_first + timedelta(minutes=30)}


async def test_a_purged_run_takes_no_more_input(harness: Harness) -> None:
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain(timeout=10)
    report = await harness.store.purge_finished_runs(
        finished_before=datetime.now(UTC) + timedelta(seconds=1), actor="U-ops"
    )
    assert report.runs == 1
    current = await harness.store.get_run(run.run_id)
    assert current is not None
    assert current.thread_ts is not None

    outcome = await harness.service.follow_up(
        channel="C-ops", thread_ts=current.thread_ts, user=REQUESTER, text="restart db"
    )

    assert isinstance(outcome, Closed)
    assert len(harness.effect_lines()) == 1
