"""Service settings: the installation's stable worker id, the approval lifetime, and
the state codec's off-loop rule."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError
from bot.off_loop import OFF_LOOP_BYTES
from bot.runtime import RunState
from bot.service import codec
from bot.service.config import approval_ttl_from_env, installation_worker_id


def test_the_worker_id_is_stable_per_database_file(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    first = installation_worker_id(str(db), environ={})
    assert first == installation_worker_id(f"sqlite:///{db}", environ={})
    assert first.startswith("local-")
    assert first != installation_worker_id(str(tmp_path / "other.db"), environ={})


def test_an_explicit_worker_id_wins_and_is_checked(tmp_path: Path) -> None:
    db = str(tmp_path / "approvals.db")
    assert installation_worker_id(db, environ={"APPROVALS_WORKER_ID": "pod-7"}) == "pod-7"
    with pytest.raises(ConfigError, match="APPROVALS_WORKER_ID"):
        installation_worker_id(db, environ={"APPROVALS_WORKER_ID": "no spaces please"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", timedelta(hours=24)), ("90", timedelta(seconds=90)), ("0", None)],
)
def test_the_approval_lifetime(value: str, expected: timedelta | None) -> None:
    assert approval_ttl_from_env({"APPROVALS_APPROVAL_TTL_SECONDS": value}) == expected


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_approval_lifetime_is_named(value: str) -> None:
    with pytest.raises(ConfigError, match="APPROVALS_APPROVAL_TTL_SECONDS"):
        approval_ttl_from_env({"APPROVALS_APPROVAL_TTL_SECONDS": value})


async def _finished_before_others_ran(work: Awaitable[object]) -> bool:
    """Whether `work` was done by the time a coroutine scheduled right after it ran:
    inline work is, work handed to a worker thread leaves the loop to others first."""
    converting = asyncio.ensure_future(work)
    seen: list[bool] = []

    async def other() -> None:
        seen.append(converting.done())

    await asyncio.gather(converting, other())
    return seen[0]


def _state(items: int, chars: int) -> RunState:
    history: Any = [{"type": "user", "content": "x" * chars} for _ in range(items)]
    return RunState(run_id="r1", agent_name="ops", agent_version="1", history=history)


async def test_a_large_state_leaves_the_event_loop_free_while_it_is_converted() -> None:
    state = _state(300, 1000)  # about 300 KB of JSON: past OFF_LOOP_BYTES
    text = state.to_json()
    assert len(text) >= OFF_LOOP_BYTES
    assert not await _finished_before_others_ran(codec.encode_state(state))
    assert not await _finished_before_others_ran(codec.decode_state(text))
    assert await codec.encode_state(state) == text
    assert (await codec.decode_state(text)).to_json() == text


async def test_a_small_state_is_converted_in_one_step() -> None:
    state = _state(3, 100)
    text = state.to_json()
    assert await _finished_before_others_ran(codec.encode_state(state))
    assert await _finished_before_others_ran(codec.decode_state(text))
    assert (await codec.decode_state(text)).to_json() == text


def test_the_encoding_estimate_never_exceeds_the_json() -> None:
    state = _state(40, 500)
    state.history.append(
        {
            "type": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "set_config", "arguments": {"v": "y" * 9000}}],
        }
    )
    estimate = codec.encoded_size_estimate(state)
    assert 40 * 500 <= estimate <= len(state.to_json())
