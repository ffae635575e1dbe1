"""The run core's execution keys (argument digests: tests/review/test_canonical.py)."""

from __future__ import annotations

from bot.runtime.decisions import execution_key


def test_execution_keys_are_stable_and_distinct_per_run_turn_and_call() -> None:
    key = execution_key("run-1", 3, "call_0")
    assert key == execution_key("run-1", 3, "call_0")
    assert len(key) == 32
    others = {
        execution_key("run-2", 3, "call_0"),
        execution_key("run-1", 5, "call_0"),  # a provider reusing ids across turns
        execution_key("run-1", 3, "call_1"),
    }
    assert key not in others
    assert len(others) == 3
