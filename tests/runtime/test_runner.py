"""The Runner: pause before any effect, approve/reject/always, turns, registry matching."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.errors import AgentNotRegisteredError, InputError, LimitError, ModelError
from bot.runtime import (
    DEFAULT_REJECTION_MESSAGE,
    Agent,
    AgentRegistry,
    ApprovedCall,
    RejectedCall,
    Runner,
    RunState,
    ScriptedModel,
)
from tests.runtime.runtime_support import Ops, results_by_call

DEPLOY = ("deploy_release", {"service": "api", "version": "1.4.2"})
RESTART = ("restart_service", {"service": "worker"})
STATUS = ("get_status", {"service": "api"})


async def test_a_run_without_approvals_completes(ops: Ops) -> None:
    agent = ops.agent([[STATUS], "api is healthy"])
    result = await Runner.arun(agent, "how is api?")
    assert (result.outcome, result.final_output, result.interruptions) == (
        "completed",
        "api is healthy",
        [],
    )
    assert [e.tool for e in ops.effects] == ["get_status"]
    assert results_by_call(result.to_state().history) == {
        "call_0_0": (json.dumps({"service": "api", "status": "healthy"}), False)
    }
    assert result.to_state().current_turn == 2


async def test_pause_happens_before_any_call_of_the_turn_runs(ops: Ops) -> None:
    agent = ops.agent([[STATUS, DEPLOY, RESTART], "done"])
    result = await Runner.arun(agent, "deploy and restart")

    assert result.outcome == "paused"
    assert result.final_output is None
    assert ops.effects == []  # not even get_status, which needs no approval
    assert [(c.tool_name, c.status) for c in result.interruptions] == [
        ("deploy_release", "approval"),
        ("restart_service", "approval"),
    ]
    assert result.to_state().pending_calls() == result.interruptions
    assert result.to_state().get_interruptions() == result.interruptions


async def test_approve_runs_each_approved_call_exactly_once(ops: Ops) -> None:
    agent = ops.agent([[STATUS, DEPLOY], "deployed"])
    paused = await Runner.arun(agent, "deploy")
    state = RunState.from_json(paused.to_state().to_json())
    [deploy] = state.get_interruptions()
    state.approve(deploy, approver_id="U_ALICE", reason="CR-1234")

    result = await Runner.arun(agent, state)

    assert result.outcome == "completed"
    assert result.final_output == "deployed"
    assert [e.tool for e in ops.effects] == ["get_status", "deploy_release"]
    assert ops.effects[1].execution_key == deploy.execution_key
    metadata = result.to_state().approval_metadata[deploy.tool_call_id]
    assert (metadata.approver_id, metadata.reason) == ("U_ALICE", "CR-1234")
    # Resuming the finished state changes nothing and runs nothing again.
    again = await Runner.arun(agent, result.to_state())
    assert again.outcome == "completed"
    assert len(ops.effects) == 2


async def test_reject_runs_nothing_and_the_model_sees_only_the_message(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "not deployed"])
    paused = await Runner.arun(agent, "deploy")
    state = paused.to_state()
    call = state.get_interruptions()[0]
    state.reject(
        call,
        message="Deploys are frozen until Monday.",
        approver_id="U_BOB",
        reason="change freeze (tier-0 policy P-7)",
    )

    result = await Runner.arun(agent, state)

    assert result.outcome == "completed"
    assert ops.effects == []
    assert results_by_call(result.to_state().history)[call.tool_call_id] == (
        "Deploys are frozen until Monday.",
        True,
    )
    model = agent.model
    assert isinstance(model, ScriptedModel)
    seen_by_model = json.dumps([list(r.history) for r in model.requests])
    assert "Deploys are frozen until Monday." in seen_by_model
    for audit_only in ("change freeze", "tier-0", "U_BOB"):
        assert audit_only not in seen_by_model
        assert audit_only not in json.dumps(result.to_state().history)
    assert result.to_state().approval_metadata[call.tool_call_id].approver_id == "U_BOB"


async def test_reject_without_message_uses_a_neutral_default(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "ok"])
    state = (await Runner.arun(agent, "deploy")).to_state()
    state.reject(state.get_interruptions()[0])
    result = await Runner.arun(agent, state)
    assert results_by_call(result.to_state().history)["call_0_0"] == (
        DEFAULT_REJECTION_MESSAGE,
        True,
    )
    assert result.to_state().approval_metadata == {}  # no approver, no reason: no audit noise


async def test_two_pending_calls_stay_paused_until_both_are_decided(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY, RESTART], "done"])
    state = (await Runner.arun(agent, "both")).to_state()
    deploy, restart = state.get_interruptions()
    state.approve(deploy)

    half = await Runner.arun(agent, state)
    assert half.outcome == "paused"
    assert ops.effects == []
    assert half.interruptions == [restart]
    assert half.to_state().decision_for(deploy.tool_call_id) == ApprovedCall()

    half.to_state().reject(restart, message="not now")
    done = await Runner.arun(agent, half.to_state())
    assert done.outcome == "completed"
    assert [e.tool for e in ops.effects] == ["deploy_release"]
    results = results_by_call(done.to_state().history)
    assert results[restart.tool_call_id] == ("not now", True)


async def test_always_approves_the_tool_for_the_rest_of_the_run(ops: Ops) -> None:
    second = ("deploy_release", {"service": "web", "version": "2.0.0"})
    agent = ops.agent([[DEPLOY], [second, RESTART], "done"])
    state = (await Runner.arun(agent, "deploy twice")).to_state()
    state.approve(state.get_interruptions()[0], always=True)

    result = await Runner.arun(agent, state)

    # The second deploy needs no decision; restart_service still does.
    assert result.outcome == "paused"
    assert [c.tool_name for c in result.interruptions] == ["restart_service"]
    assert [c.tool_name for c in result.to_state().pending_calls()] == ["restart_service"]
    assert [e.tool for e in ops.effects] == ["deploy_release"]
    state = RunState.from_json(result.to_state().to_json())  # the rule survives the wire
    assert state.always_rule("deploy_release") == ApprovedCall()
    state.approve(state.get_interruptions()[0])
    result = await Runner.arun(agent, state)
    assert result.outcome == "completed"
    assert [e.arguments.get("service") for e in ops.effects] == ["api", "web", "worker"]


async def test_always_reject_applies_to_later_calls_of_the_tool(ops: Ops) -> None:
    agent = ops.agent([[RESTART], [RESTART], "gave up"])
    state = (await Runner.arun(agent, "restart")).to_state()
    state.reject(state.get_interruptions()[0], message="no restarts today", always=True)
    result = await Runner.arun(agent, state)
    assert result.outcome == "completed"
    assert ops.effects == []
    assert result.to_state().always_rule("restart_service") == RejectedCall(
        message="no restarts today"
    )
    assert [c for c, _ in results_by_call(result.to_state().history).values()] == [
        "no restarts today",
        "no restarts today",
    ]


async def test_bad_calls_become_error_results_for_the_model(ops: Ops) -> None:
    agent = ops.agent(
        [
            [
                ("deploy_release", {"service": "api"}),
                ("launch_rockets", {}),
                ("get_status", {"service": 7}),
            ],
            "sorry",
        ]
    )
    result = await Runner.arun(agent, "go")
    assert result.outcome == "completed"
    assert ops.effects == []
    results = results_by_call(result.to_state().history)
    assert results["call_0_0"][1]
    assert "missing required argument 'version'" in results["call_0_0"][0]
    assert results["call_0_1"][1]
    assert "Unknown tool 'launch_rockets'" in results["call_0_1"][0]
    assert "'service' must be a string" in results["call_0_2"][0]


async def test_a_tool_that_raises_gives_the_model_an_error_result(ops: Ops) -> None:
    from bot.runtime import tool

    @tool
    def flaky(service: str) -> str:
        raise TimeoutError("upstream did not answer")

    agent = Agent(
        name="ops",
        instructions="",
        tools=[flaky],
        model=ScriptedModel([[("flaky", {"service": "api"})], "it failed"]),
    )
    result = await Runner.arun(agent, "go")
    content, is_error = results_by_call(result.to_state().history)["call_0_0"]
    assert is_error
    assert content == "Tool 'flaky' failed: TimeoutError: upstream did not answer"
    assert result.final_output == "it failed"


async def test_a_tool_error_carrying_a_credential_reaches_neither_the_model_nor_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bot.runtime import tool

    token = "xoxb-1234567890-abcdefghijklmnop"

    @tool
    def notify(channel: str) -> str:
        raise PermissionError(f"POST https://hooks.example/post?token={token} -> 401")

    agent = Agent(
        name="ops",
        instructions="",
        tools=[notify],
        model=ScriptedModel([[("notify", {"channel": "ops"})], "it failed"]),
    )
    with caplog.at_level("DEBUG"):
        result = await Runner.arun(agent, "go")
    content, is_error = results_by_call(result.to_state().history)["call_0_0"]
    assert is_error
    assert content.startswith("Tool 'notify' failed: PermissionError: POST https://hooks.")
    assert token not in result.to_state().to_json()
    assert caplog.records  # the failure is logged, with its traceback
    assert all(token not in record.getMessage() for record in caplog.records)
    assert all(token not in caplog.handler.format(record) for record in caplog.records)


async def test_max_turns_stops_with_a_clear_state(ops: Ops) -> None:
    agent = ops.agent([[STATUS], [STATUS], [STATUS], "never reached"])
    result = await Runner.arun(agent, "loop", max_turns=2)
    assert (result.outcome, result.final_output, result.interruptions) == ("max_turns", None, [])
    assert result.to_state().current_turn == 2
    assert result.to_state().max_turns == 2
    assert len(ops.effects) == 2
    # A larger limit on resume lets it finish.
    resumed = await Runner.arun(agent, result.to_state(), max_turns=5)
    assert (resumed.outcome, resumed.final_output) == ("completed", "never reached")


async def test_a_turn_with_more_calls_than_the_limit_runs_none_of_them(ops: Ops) -> None:
    statuses = [("get_status", {"service": f"s{i}"}) for i in range(3)]
    agent = ops.agent([statuses, "all healthy"])
    with pytest.raises(LimitError) as raised:
        await Runner.arun(agent, "status of all", max_tool_calls_per_turn=2)
    assert str(raised.value) == (
        "the model asked for 3 tool calls in one turn; the limit is 2 per turn, so none of them ran"
    )
    assert ops.effects == []  # not even the calls that need no approval
    done = await Runner.arun(ops.agent([statuses, "ok"]), "status", max_tool_calls_per_turn=3)
    assert done.outcome == "completed"
    assert len(ops.effects) == 3
    with pytest.raises(InputError, match="max_tool_calls_per_turn must be at least 1"):
        await Runner.arun(agent, "hi", max_tool_calls_per_turn=0)


async def test_an_exhausted_script_is_a_model_error(ops: Ops) -> None:
    with pytest.raises(ModelError, match="script exhausted"):
        await Runner.arun(ops.agent([[STATUS]]), "go")


async def test_dependencies_reach_tools_and_are_never_serialized(ops: Ops) -> None:
    token = "xoxb-1234567890-abcdefghijkl"
    agent = ops.agent([[DEPLOY], "ok"])
    paused = await Runner.arun(agent, "deploy", dependencies={"ops_token": token})
    assert token not in paused.to_state().to_json()
    paused.to_state().approve(paused.to_state().get_interruptions()[0])
    result = await Runner.arun(agent, paused.to_state(), dependencies={"ops_token": token})
    assert ops.effects[0].dependencies == {"ops_token": token}
    assert token not in result.to_state().to_json()


async def test_resuming_leaves_the_given_state_untouched(ops: Ops) -> None:
    agent = ops.agent([[DEPLOY], "ok"])
    state = (await Runner.arun(agent, "deploy")).to_state()
    state.approve(state.get_interruptions()[0])
    before = state.to_json()
    result = await Runner.arun(agent, state)
    assert state.to_json() == before
    assert result.to_state() is not state


async def test_resume_needs_the_same_agent_name_and_version(ops: Ops) -> None:
    state = (await Runner.arun(ops.agent([[DEPLOY], "ok"]), "deploy")).to_state()
    with pytest.raises(AgentNotRegisteredError, match=r"agent 'ops' version '1'.*version '2'"):
        await Runner.arun(ops.agent([[DEPLOY], "ok"], version="2"), state)


async def test_registry_finds_the_agent_or_names_what_it_has(ops: Ops) -> None:
    v1 = ops.agent([[DEPLOY], "ok"])
    state = (await Runner.arun(v1, "deploy")).to_state()
    state.approve(state.get_interruptions()[0])

    registry = AgentRegistry([ops.agent([[DEPLOY], "ok"], version="2")])
    with pytest.raises(AgentNotRegisteredError) as caught:
        await Runner.arun(None, state, registry=registry)
    assert "'ops' version '1' is not registered (registered: ops v2)" in str(caught.value)

    registry.register(v1)
    result = await Runner.arun(None, state, registry=registry)
    assert result.outcome == "completed"
    assert len(ops.effects) == 1


def test_registry_rejects_duplicates_and_supports_factories(ops: Ops) -> None:
    from bot.errors import ConfigError

    registry = AgentRegistry()

    @registry.register
    def build() -> Agent:
        return ops.agent(["hi"])

    assert registry.get("ops", "1") is build
    assert registry.latest("ops") is build
    assert registry.default() is build
    with pytest.raises(ConfigError, match="registered twice"):
        registry.register(ops.agent(["hi"]))
    with pytest.raises(AgentNotRegisteredError, match="no agent named 'nope'"):
        registry.latest("nope")


async def test_bad_runner_input_is_refused(ops: Ops) -> None:
    agent = ops.agent(["hi"])
    with pytest.raises(InputError, match="task string or a RunState"):
        await Runner.arun(agent, 42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="max_turns must be at least 1"):
        await Runner.arun(agent, "hi", max_turns=0)


async def test_model_returning_repeated_call_ids_is_refused(ops: Ops) -> None:
    from bot.runtime import ModelResponse, ToolCall

    class Repeating:
        async def respond(self, **_: Any) -> ModelResponse:
            call = ToolCall(id="same", name="get_status", arguments={"service": "a"})
            return ModelResponse(tool_calls=[call, call])

    agent = Agent(name="ops", instructions="", tools=ops.tools, model=Repeating())
    with pytest.raises(ModelError, match="repeated tool call id 'same'"):
        await Runner.arun(agent, "go")
    assert ops.effects == []


async def test_a_call_once_asked_about_never_runs_without_a_decision(ops: Ops) -> None:
    from bot.runtime import tool

    answers = iter([True, False, False])
    effects: list[str] = []

    @tool(needs_approval=lambda arguments: next(answers))
    def scale(service: str) -> str:
        effects.append(service)
        return "scaled"

    agent = Agent(
        name="ops",
        instructions="",
        tools=[scale],
        model=ScriptedModel([[("scale", {"service": "api"})], "done"]),
    )
    paused = await Runner.arun(agent, "scale api")
    assert paused.outcome == "paused"
    # The rule now says "no approval needed", but the pending call is still undecided.
    again = await Runner.arun(agent, paused.to_state())
    assert again.outcome == "paused"
    assert effects == []
