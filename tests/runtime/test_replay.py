"""Never twice by accident: journal reuse, replay policies after a crash, reconciliation."""

from __future__ import annotations

import pytest

from bot.errors import AlreadyDecidedError, InputError, ResolutionError, UnknownCallError
from bot.runtime import (
    AbortCall,
    ApprovedCall,
    InMemoryJournal,
    PendingCall,
    RejectedCall,
    RetryCall,
    Runner,
    RunState,
    VerifiedResult,
)
from bot.runtime.decisions import ABORTED_MESSAGE
from bot.runtime.journal import Recorded
from tests.runtime.runtime_support import Ops, results_by_call

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})
RESTART = ("restart_service", {"service": "worker"})
SET = ("set_config", {"service": "api", "key": "pool_size", "value": "20"})
STATUS = ("get_status", {"service": "api"})


async def crashed_mid_dispatch(
    journal: InMemoryJournal, state: RunState, call: PendingCall
) -> None:
    """What a process that died inside the tool leaves behind: intent, no result."""
    await journal.claim(
        execution_key=call.execution_key,
        arguments_digest=state.digest_of(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            execution_key=call.execution_key,
            arguments=call.arguments,
        ),
        run_id="run-that-died",
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
    )


async def approved_after_crash(
    ops: Ops, step: tuple[str, dict[str, str]]
) -> tuple[RunState, InMemoryJournal]:
    agent = ops.agent([[step], "finished"])
    state = (await Runner.arun(agent, "go")).to_state()
    call = state.get_interruptions()[0]
    state.approve(call)
    journal = InMemoryJournal()
    await crashed_mid_dispatch(journal, state, call)
    return state, journal


async def test_a_recorded_result_is_reused_and_the_tool_not_called(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "finished"])
    state = (await Runner.arun(agent, "go")).to_state()
    state.approve(state.get_interruptions()[0])
    journal = InMemoryJournal()
    first = await Runner.arun(agent, state, journal=journal)
    # The process died after the tool ran but before the new state was saved:
    # the old (approved, paused) state is resumed again with the same journal.
    second = await Runner.arun(agent, state, journal=journal)
    assert len(ops.effects) == 1
    assert results_by_call(first.to_state().history) == results_by_call(second.to_state().history)


async def test_safe_policy_runs_again_after_a_crash(ops: Ops) -> None:
    state, journal = await approved_after_crash(ops, SET)
    result = await Runner.arun(ops.agent([[SET], "finished"]), state, journal=journal)
    assert result.outcome == "completed"
    assert [(e.tool, e.attempt) for e in ops.effects] == [("set_config", 2)]


async def test_idempotent_policy_runs_again_with_the_same_execution_key(ops: Ops) -> None:
    state, journal = await approved_after_crash(ops, DEPLOY)
    key = state.pending_calls()[0].execution_key
    result = await Runner.arun(ops.agent([[DEPLOY], "finished"]), state, journal=journal)
    assert result.outcome == "completed"
    assert [(e.tool, e.execution_key, e.attempt) for e in ops.effects] == [
        ("deploy_release", key, 2)
    ]


async def test_manual_policy_pauses_the_call_as_uncertain(ops: Ops) -> None:
    state, journal = await approved_after_crash(ops, RESTART)
    result = await Runner.arun(ops.agent([[RESTART], "finished"]), state, journal=journal)
    assert result.outcome == "paused"
    assert ops.effects == []
    [uncertain] = result.interruptions
    assert uncertain.status == "uncertain"
    assert uncertain.tool_name == "restart_service"
    assert result.to_state().pending_calls() == [uncertain]
    # Unresolved, it stays paused without calling the tool.
    again = await Runner.arun(
        ops.agent([[RESTART], "finished"]), result.to_state(), journal=journal
    )
    assert again.outcome == "paused"
    assert ops.effects == []


async def test_a_call_needing_no_approval_also_follows_manual_replay(ops: Ops) -> None:
    agent = ops.agent([[STATUS, DEPLOY], "finished"])
    state = (await Runner.arun(agent, "go")).to_state()
    state.approve(state.get_interruptions()[0])
    outstanding = state.outstanding_calls()[0]
    journal = InMemoryJournal()
    status_call = PendingCall(
        tool_call_id=outstanding.call["id"],
        tool_name="get_status",
        arguments=outstanding.call["arguments"],
        execution_key=outstanding.execution_key,
        status="approval",
    )
    await crashed_mid_dispatch(journal, state, status_call)
    result = await Runner.arun(agent, state, journal=journal)
    assert [(c.tool_name, c.status) for c in result.interruptions] == [("get_status", "uncertain")]
    # The approved deploy keeps its approval while the run waits.
    assert [c.tool_name for c in result.to_state().pending_calls()] == [
        "deploy_release",
        "get_status",
    ]


async def uncertain_restart(ops: Ops) -> tuple[RunState, InMemoryJournal, PendingCall]:
    state, journal = await approved_after_crash(ops, RESTART)
    paused = await Runner.arun(ops.agent([[RESTART], "finished"]), state, journal=journal)
    return paused.to_state(), journal, paused.interruptions[0]


async def test_resolve_with_a_verified_result_uses_it(ops: Ops) -> None:
    state, journal, call = await uncertain_restart(ops)
    state.resolve(
        call.execution_key,
        VerifiedResult(result="worker restarted at 10:02 (checked in console)"),
        approver_id="U_OPS",
        reason="verified in the console",
    )
    assert state.decision_for(call) == VerifiedResult(
        result="worker restarted at 10:02 (checked in console)"
    )
    result = await Runner.arun(ops.agent([[RESTART], "finished"]), state, journal=journal)
    assert result.outcome == "completed"
    assert ops.effects == []
    assert results_by_call(result.to_state().history)[call.tool_call_id] == (
        "worker restarted at 10:02 (checked in console)",
        False,
    )
    claim = await journal.claim(
        execution_key=call.execution_key,
        arguments_digest=state.call_digest(call),
        run_id="x",
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
    )
    assert claim == Recorded(
        result="worker restarted at 10:02 (checked in console)", is_error=False
    )
    assert (
        result.to_state().approval_metadata[call.tool_call_id].reason == "verified in the console"
    )


async def test_resolve_retry_runs_the_tool_once_more(ops: Ops) -> None:
    state, journal, call = await uncertain_restart(ops)
    state.resolve(call, RetryCall())
    assert state.decision_for(call) == RetryCall()
    result = await Runner.arun(ops.agent([[RESTART], "finished"]), state, journal=journal)
    assert result.outcome == "completed"
    assert [(e.tool, e.attempt) for e in ops.effects] == [("restart_service", 2)]


async def test_resolve_abort_tells_the_model_and_runs_nothing(ops: Ops) -> None:
    state, journal, call = await uncertain_restart(ops)
    state.resolve(call.tool_call_id, AbortCall())
    assert state.decision_for(call) == AbortCall()
    result = await Runner.arun(ops.agent([[RESTART], "finished"]), state, journal=journal)
    assert result.outcome == "completed"
    assert ops.effects == []
    content, is_error = results_by_call(result.to_state().history)[call.tool_call_id]
    assert is_error
    assert content == ABORTED_MESSAGE
    assert "aborted by operator" in content


async def test_resolve_errors(ops: Ops) -> None:
    state, _, call = await uncertain_restart(ops)
    with pytest.raises(UnknownCallError, match=r"no pending call .* 'nope'"):
        state.resolve("nope", RetryCall())
    for not_a_resolution in (ApprovedCall(), RejectedCall(message="no"), None, "retry"):
        with pytest.raises(ResolutionError, match="takes a VerifiedResult, RetryCall or AbortCall"):
            state.resolve(call, not_a_resolution)  # type: ignore[arg-type]
    with pytest.raises(ResolutionError, match="uncertain outcome, so it cannot be approved"):
        state.approve(call)
    with pytest.raises(ResolutionError, match="cannot be rejected"):
        state.reject(call)
    with pytest.raises(InputError, match="must be a string"):
        state.resolve(call, VerifiedResult(result=42))  # type: ignore[arg-type]
    before = state.to_json()  # none of the refusals changed anything
    state.resolve(call, AbortCall())
    with pytest.raises(AlreadyDecidedError, match="already decided: abort"):
        state.resolve(call, RetryCall())
    assert before != state.to_json()


async def test_approval_decision_errors(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "finished"])
    state = (await Runner.arun(agent, "go")).to_state()
    call = state.get_interruptions()[0]
    with pytest.raises(ResolutionError, match="waits for approval, not reconciliation"):
        state.resolve(call, RetryCall())
    with pytest.raises(UnknownCallError):
        state.approve("call_9_9")
    altered = PendingCall(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        arguments={**call.arguments, "version": "6.6.6"},
        execution_key=call.execution_key,
        status="approval",
    )
    with pytest.raises(ResolutionError, match="differs from the run's pending call"):
        state.approve(altered)
    state.approve(call.execution_key)
    with pytest.raises(AlreadyDecidedError) as caught:
        state.reject(call)
    assert caught.value.status == "approved"


async def test_a_verified_result_stands_without_the_original_journal(ops: Ops) -> None:
    # After a restart without a durable journal, the fresh in-memory one has no entry.
    state, _, call = await uncertain_restart(ops)
    state.resolve(call, VerifiedResult(result="checked: worker is up"))
    result = await Runner.arun(ops.agent([[RESTART], "finished"]), state)
    assert result.outcome == "completed"
    assert ops.effects == []
    assert results_by_call(result.to_state().history)[call.tool_call_id] == (
        "checked: worker is up",
        False,
    )
