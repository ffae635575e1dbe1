"""The run core's execution keys and argument digests."""

from __future__ import annotations

from typing import Any

import pytest

from bot import review
from bot.runtime import arguments_digest
from bot.runtime.digest import canonical_json, execution_key


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"service": "api", "version": "1.4.2"},
        {"b": 1, "a": [1.5, None, True], "ü": "naïve ✓", "nested": {"z": {}, "y": []}},
    ],
)
def test_digest_matches_the_review_snapshot_digest(arguments: dict[str, Any]) -> None:
    # The journal and the review card must agree on what "the same arguments" means.
    assert arguments_digest(arguments) == review.arguments_digest(arguments)
    assert canonical_json(arguments) == review.canonical_arguments(arguments)


def test_canonical_json_sorts_keys_is_compact_and_keeps_utf8() -> None:
    assert canonical_json({"b": "ü", "a": 1}) == '{"a":1,"b":"ü"}'.encode()


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
