"""The ops agent end to end under the real Runner: approve, reject, crash and re-run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bot.canonical import legacy_arguments_digest
from bot.credentials import REDACTED
from bot.demo import ops_dependencies, token_fingerprint
from bot.review.snapshot import review_snapshot
from bot.runtime import DEFAULT_REJECTION_MESSAGE, Runner, RunState
from bot.runtime.journal import InMemoryJournal
from tests.demo.ops_harness import OPS_TOKEN, Ops


async def test_an_approved_deploy_runs_once_and_is_reported(ops: Ops) -> None:
    paused = await ops.run("deploy payments 1.2.3")
    assert paused.outcome == "paused"
    assert ops.effect_lines() == []  # nothing happens before a decision
    [call] = paused.interruptions
    assert (call.tool_name, call.arguments) == (
        "deploy_release",
        {"service": "payments", "version": "1.2.3"},
    )

    state = RunState.from_json(paused.to_state().to_json())
    state.approve(call, approver_id="U-alice", reason="CR-42")
    done = await ops.run(state)

    assert done.outcome == "completed"
    [effect] = ops.effect_lines()
    assert effect["tool"] == "deploy_release"
    assert effect["arguments"] == {"service": "payments", "version": "1.2.3"}
    assert effect["execution_key"] == call.execution_key
    assert effect["duplicate"] is False
    assert effect["result"] == "deployed payments 1.2.3"
    assert effect["auth"] == token_fingerprint(OPS_TOKEN)  # the injected token was used
    assert effect["time"].endswith("Z")
    assert done.final_output is not None
    assert "deploy payments 1.2.3: deployed payments 1.2.3" in done.final_output
    assert "CR-42" not in done.final_output


async def test_a_rejected_call_never_runs_and_only_its_message_reaches_the_answer(
    ops: Ops,
) -> None:
    paused = await ops.run("restart api")
    state = paused.to_state()
    [call] = state.get_interruptions()
    state.reject(call, message="Not during the freeze.", approver_id="U-bob", reason="audit-7f3")

    done = await ops.run(state)

    assert ops.effect_lines() == []
    assert done.final_output is not None
    assert "restart api: not done: Not during the freeze." in done.final_output
    assert "audit-7f3" not in done.final_output
    assert "audit-7f3" not in json.dumps(done.to_state().history)


async def test_a_rejection_without_a_message_reports_the_default(ops: Ops) -> None:
    paused = await ops.run("restart api")
    paused.to_state().reject(paused.interruptions[0])
    done = await ops.run(paused.to_state())
    assert done.final_output is not None
    assert DEFAULT_REJECTION_MESSAGE in done.final_output


async def test_several_commands_pause_together_and_are_all_reported(ops: Ops) -> None:
    paused = await ops.run("deploy payments 1.2.3 and restart api AND status payments")
    assert [call.tool_name for call in paused.interruptions] == [
        "deploy_release",
        "restart_service",
    ]
    assert ops.effect_lines() == []  # the status read waits with the turn, too
    deploy, restart = paused.interruptions
    paused.to_state().approve(deploy)
    paused.to_state().reject(restart, message="later")

    done = await ops.run(paused.to_state())

    assert [line["tool"] for line in ops.effect_lines()] == ["deploy_release"]
    assert done.final_output == (
        "Here is what happened:\n"
        "- deploy payments 1.2.3: deployed payments 1.2.3\n"
        "- restart api: not done: later\n"
        "- status payments: payments: running 1.2.3"  # calls run in order
    )


async def test_status_reports_what_was_deployed_and_configured(ops: Ops) -> None:
    paused = await ops.run("deploy api 2.0.1 and set api log_level=debug")
    for call in paused.interruptions:
        paused.to_state().approve(call)
    await ops.run(paused.to_state())

    done = await ops.run("status api")
    assert done.outcome == "completed"  # no approval needed for a read
    assert done.final_output is not None
    assert "api: running 2.0.1; config keys set: log_level" in done.final_output
    assert len(ops.effect_lines()) == 2  # a read adds no effect line


async def test_a_secret_config_value_is_redacted_for_review_and_applied_for_real(
    ops: Ops,
) -> None:
    paused = await ops.run("set payments db_password=hunter2-very-secret")
    [call] = paused.interruptions
    snapshot = review_snapshot(
        call.tool_name, call.arguments, digest=paused.to_state().call_digest(call)
    )
    assert snapshot.arguments == {"service": "payments", "key": "db_password", "value": REDACTED}
    # The card's digest is keyed: nobody can test guesses of the hidden value against it.
    assert snapshot.digest != legacy_arguments_digest(
        {"service": "payments", "key": "db_password", "value": "hunter2-very-secret"}
    )

    paused.to_state().approve(call)
    done = await ops.run(paused.to_state())

    [effect] = ops.effect_lines()
    assert effect["arguments"]["value"] == REDACTED  # the effects file holds no secret
    assert effect["arguments_digest"] == snapshot.digest  # the call the card showed ran
    assert done.final_output is not None
    assert "hunter2" not in done.final_output
    assert "set payments db_password: set db_password on payments" in done.final_output


async def test_the_token_never_reaches_a_serialized_state(ops: Ops) -> None:
    paused = await ops.run("deploy payments 1.2.3 and set payments token=abc123")
    assert OPS_TOKEN not in paused.to_state().to_json()
    for call in paused.interruptions:
        paused.to_state().approve(call)
    done = await ops.run(paused.to_state())
    assert len(ops.effect_lines()) == 2
    assert OPS_TOKEN not in done.to_state().to_json()
    assert OPS_TOKEN not in ops.effects.read_text()


async def test_an_unknown_task_gets_a_helpful_answer(ops: Ops) -> None:
    done = await ops.run("please make it faster and deploy payments 1.2.3")
    assert done.outcome == "completed"
    assert done.final_output is not None
    assert 'I did not understand "please make it faster"' in done.final_output
    for command in ("deploy <service> <version>", "restart <service>", "status <service>"):
        assert command in done.final_output
    assert ops.effect_lines() == []


async def test_tools_without_their_dependencies_fail_clearly(ops: Ops) -> None:
    done = await Runner.arun(ops.agent, "status api")  # no dependencies given
    assert done.final_output is not None
    assert "ops_dependencies()" in done.final_output


async def test_a_bad_service_name_is_an_error_result_not_a_crash(ops: Ops) -> None:
    paused = await ops.run("deploy ../etc 1.0")
    paused.to_state().approve(paused.interruptions[0])
    done = await ops.run(paused.to_state())
    assert ops.effect_lines() == []
    assert done.final_output is not None
    assert "service '../etc' must be" in done.final_output


class CrashAfterEffect(Exception):
    """The process 'dies' after the tool ran, before its result was recorded."""


class CrashingJournal(InMemoryJournal):
    def __init__(self) -> None:
        super().__init__()
        self.crash_next_record = False

    async def record_result(self, **kwargs: Any) -> None:
        if self.crash_next_record:
            self.crash_next_record = False
            raise CrashAfterEffect
        await super().record_result(**kwargs)


async def crash_then_resume(ops: Ops, task: str) -> tuple[str, Any]:
    """Approve `task`'s call, crash after its effect, then resume the approved state again."""
    journal = CrashingJournal()
    paused = await ops.run(task, journal=journal)
    paused.to_state().approve(paused.interruptions[0])
    approved = paused.to_state().to_json()
    journal.crash_next_record = True
    with pytest.raises(CrashAfterEffect):
        await ops.run(RunState.from_json(approved), journal=journal)
    return paused.interruptions[0].execution_key, await ops.run(
        RunState.from_json(approved), journal=journal
    )


async def test_an_idempotent_rerun_with_the_same_key_is_a_downstream_duplicate(ops: Ops) -> None:
    key, done = await crash_then_resume(ops, "deploy payments 1.2.3")

    first, second = ops.effect_lines()
    assert first["execution_key"] == second["execution_key"] == key
    assert first["duplicate"] is False
    assert second["duplicate"] is True
    assert second["result"] == first["result"]  # the downstream answered with the first result
    assert done.outcome == "completed"
    assert "deployed payments 1.2.3" in done.final_output


async def test_a_manual_call_is_not_rerun_after_a_crash(ops: Ops) -> None:
    key, done = await crash_then_resume(ops, "restart api")

    [effect] = ops.effect_lines()
    assert effect["execution_key"] == key
    assert done.outcome == "paused"
    [uncertain] = done.interruptions
    assert uncertain.status == "uncertain"
    assert uncertain.execution_key == key


async def test_latency_comes_after_the_effect_which_is_the_crash_window(ops: Ops) -> None:
    slow = ops_dependencies(
        {
            "OPS_API_TOKEN": OPS_TOKEN,
            "APPROVALS_DEMO_EFFECTS": str(ops.effects),
            "OPS_DEMO_LATENCY": "600",
        }
    )
    paused = await ops.run("deploy payments 1.2.3")
    paused.to_state().approve(paused.interruptions[0])
    journal = InMemoryJournal()
    resumed = asyncio.create_task(
        Runner.arun(ops.agent, paused.to_state(), dependencies=slow, journal=journal)
    )
    try:
        deadline = asyncio.get_running_loop().time() + 10
        while not ops.effect_lines():  # poll the downstream, bounded by the deadline
            assert not resumed.done()
            assert asyncio.get_running_loop().time() < deadline, "the effect never appeared"
            await asyncio.sleep(0.01)
    finally:
        resumed.cancel()  # the "crash": inside the latency, after the effect
        with pytest.raises(asyncio.CancelledError):
            await resumed

    [effect] = ops.effect_lines()
    assert effect["execution_key"] == paused.interruptions[0].execution_key
