"""Property: to_json -> from_json -> to_json is identical, for any valid state."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.runtime import RunState
from bot.runtime.decisions import execution_key

ids = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
names = st.sampled_from(["deploy_release", "restart_service", "set_config", "get_status"])
plain_text = st.text(alphabet=string.ascii_letters + string.digits + " .,:ü✓", max_size=30)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
safe_context = st.none() | st.dictionaries(
    ids,
    st.none() | st.integers(-(2**63), 2**63 - 1) | plain_text | st.lists(plain_text, max_size=3),
    max_size=4,
)
timestamps = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@st.composite
def states(draw: st.DrawFn) -> RunState:
    run_id = draw(ids)
    history: list[dict[str, Any]] = [{"type": "user", "content": draw(st.text(max_size=40))}]
    for turn in range(draw(st.integers(0, 3))):
        call_id = f"done_{turn}"
        history.append(
            {
                "type": "assistant",
                "content": draw(st.none() | plain_text),
                "tool_calls": [{"id": call_id, "name": draw(names), "arguments": draw(arguments)}],
            }
        )
        history.append(
            {
                "type": "tool_result",
                "tool_call_id": call_id,
                "name": "get_status",
                "content": draw(st.text(max_size=40)),
                "is_error": draw(st.booleans()),
            }
        )
    calls = draw(st.lists(st.tuples(ids, names, arguments), max_size=4, unique_by=lambda c: c[0]))
    history.append(
        {
            "type": "assistant",
            "content": None,
            "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
        }
    )
    turn_index = len(history) - 1
    pending, decisions, metadata = [], {}, {}
    for call_id, name, args in calls:
        if not draw(st.booleans()):
            continue
        status = draw(st.sampled_from(["approval", "uncertain"]))
        pending.append(
            {
                "tool_call_id": call_id,
                "tool_name": name,
                "arguments": args,
                "execution_key": execution_key(run_id, turn_index, call_id),
                "status": status,
            }
        )
        options = (
            [{"kind": "approved"}, {"kind": "rejected", "message": draw(plain_text)}]
            if status == "approval"
            else [
                {"kind": "retry"},
                {"kind": "abort"},
                {"kind": "verified_result", "result": draw(plain_text)},
            ]
        )
        decision = draw(st.none() | st.sampled_from(options))
        if decision is not None:
            decisions[call_id] = decision
        if draw(st.booleans()):
            metadata[call_id] = {
                "approver_id": draw(st.none() | ids),
                "reason": draw(st.none() | plain_text),
                "timestamp": draw(timestamps).isoformat(),
            }
    always = draw(
        st.dictionaries(
            names,
            st.sampled_from([{"kind": "approved"}, {"kind": "rejected", "message": "no"}]),
            max_size=2,
        )
    )
    payload = {
        "$schemaVersion": "1.0",
        "run_id": run_id,
        "agent_name": draw(ids),
        "agent_version": draw(ids),
        "current_turn": draw(st.integers(0, 50)),
        "max_turns": draw(st.integers(1, 50)),
        "history": history,
        "context": draw(safe_context),
        "pending_calls": pending,
        "decisions": decisions,
        "always": always,
        "approval_metadata": metadata,
    }
    return RunState.from_dict(payload)


@settings(max_examples=80, deadline=None)
@given(states())
def test_json_round_trip_is_identical(state: RunState) -> None:
    text = state.to_json()
    assert RunState.from_json(text).to_json() == text


@settings(max_examples=40, deadline=None)
@given(states())
def test_dict_round_trip_is_identical_and_independent(state: RunState) -> None:
    data = state.to_dict()
    again = RunState.from_dict(data)
    assert again.to_dict() == data
    data["history"].clear()  # the dict is a copy: the state does not change
    assert again.to_json() == state.to_json()
    assert again.get_interruptions() == state.get_interruptions()
