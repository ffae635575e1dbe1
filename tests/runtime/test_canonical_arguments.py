"""Arguments that are not canonical JSON are refused at the model boundary.

A lenient JSON parser (Python's json.loads) gives NaN and Infinity, and the RunState
codec would write them as null: the call a human approved would not be the call that
runs. Such a call never runs and never waits for approval: the model gets an error result
naming the problem, and the stored state holds no trace of the bad value."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from bot.runtime import Agent, Runner, RunState, ScriptedModel, Tool, tool
from tests.runtime.runtime_support import results_by_call


def scaling_agent(script: list[Any], runs: list[float]) -> Agent:
    @tool(needs_approval=True)
    def scale_service(service: str, factor: float) -> str:
        """Scale a service's replicas by a factor."""
        runs.append(factor)
        return f"scaled {service} by {factor}"

    @tool
    def get_status(service: str) -> str:
        """Report a service's health."""
        return f"{service} is healthy"

    tools: list[Tool] = [scale_service, get_status]
    return Agent(
        name="ops",
        version="1",
        instructions="Scale carefully.",
        tools=tools,
        model=ScriptedModel(script),
    )


@pytest.mark.parametrize(
    ("bad_arguments", "problem"),
    [
        ({"service": "api", "factor": math.nan}, "finite JSON numbers"),
        ({"service": "api", "factor": -math.inf}, "finite JSON numbers"),
        ({"service": "api", "factor": 2**64}, "integer 18446744073709551616 is outside"),
        ({"service": "api\ud800", "factor": 2.0}, "not valid Unicode"),
    ],
)
async def test_a_call_with_non_canonical_arguments_is_answered_with_an_error(
    bad_arguments: dict[str, Any], problem: str
) -> None:
    runs: list[float] = []
    agent = scaling_agent(
        [[("scale_service", bad_arguments), ("get_status", {"service": "api"})], "gave up"],
        runs,
    )
    result = await Runner.arun(agent, "scale api")

    assert result.outcome == "completed"  # no pause: nothing valid waits for approval
    assert runs == []
    results = results_by_call(result.to_state().history)
    content, is_error = results["call_0_0"]
    assert is_error
    assert content.startswith("Invalid arguments for tool 'scale_service': ")
    assert re.search(problem, content)
    assert results["call_0_1"] == ("api is healthy", False)  # the turn's other call ran
    asked = result.to_state().history[1]
    assert asked["type"] == "assistant"
    assert asked["tool_calls"][0]["arguments"] == {}  # the bad value is not kept
    assert RunState.from_json(result.to_state().to_json()).history == result.to_state().history


async def test_the_model_can_correct_a_refused_call_and_the_corrected_one_is_approved() -> None:
    runs: list[float] = []
    script: list[Any] = [
        [("scale_service", {"service": "api", "factor": math.nan})],
        [("scale_service", {"service": "api", "factor": 1.5})],
        "scaled",
    ]
    agent = scaling_agent(script, runs)
    paused = await Runner.arun(agent, "scale api")

    assert paused.outcome == "paused"
    [pending] = paused.interruptions
    assert pending.tool_call_id == "call_1_0"
    assert pending.arguments == {"service": "api", "factor": 1.5}
    # what a reviewer approves is exactly what a restarted process loads
    stored = RunState.from_json(paused.to_state().to_json())
    assert stored.get_interruptions()[0].arguments == pending.arguments
    stored.approve(pending, approver_id="U1")
    done = await Runner.arun(agent, stored)
    assert done.outcome == "completed"
    assert runs == [1.5]
    model = agent.model
    assert isinstance(model, ScriptedModel)
    second_request = model.requests[1].history
    assert second_request[-1]["type"] == "tool_result"
    assert second_request[-1]["is_error"]
