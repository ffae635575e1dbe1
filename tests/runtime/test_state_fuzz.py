"""Fuzzing `RunState.from_json`: whatever bytes a database, a copy or an attacker puts
where a state belongs, loading it either gives a state that reads back and saves as it
loaded, or raises from our error tree (bot.errors), never another exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.errors import ApprovalsError
from bot.runtime import RunState
from tests.fuzzing import JSON_VALUES, mutated

FIXTURES = Path(__file__).parent.parent / "fixtures" / "run_state"
VALID = [json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*.json"))]
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_or_refuse(text: str | bytes) -> None:
    """Load `text`; a state that loads must be usable: its pending calls, their digests
    and a save that loads back to the same state."""
    try:
        state = RunState.from_json(text)
    except ApprovalsError:
        return
    for call in state.get_interruptions():
        state.call_digest(call)
    state.outstanding_calls()
    saved = state.to_json()
    assert RunState.from_json(saved).to_json() == saved


@FUZZ
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_any_text_loads_or_is_refused_by_our_errors(text: str | bytes) -> None:
    load_or_refuse(text)


@FUZZ
@given(JSON_VALUES)
def test_any_json_value_loads_or_is_refused_by_our_errors(value: Any) -> None:
    load_or_refuse(json.dumps(value))


@FUZZ
@given(st.sampled_from(VALID).flatmap(mutated))
def test_a_damaged_real_state_loads_or_is_refused_by_our_errors(value: Any) -> None:
    load_or_refuse(json.dumps(value))
