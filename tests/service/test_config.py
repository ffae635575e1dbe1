"""Service settings: the installation's stable worker id, the approval lifetime, and
the state codec's off-loop path."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest

from bot.errors import ConfigError
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


async def test_a_large_state_is_converted_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history = [{"type": "user", "content": "x" * 1000} for _ in range(codec.OFFLOAD_HISTORY_ITEMS)]
    state = RunState(run_id="r1", agent_name="ops", agent_version="1", history=history)  # type: ignore[arg-type]
    threads: list[str] = []
    real_from_json = RunState.from_json

    def spying_from_json(text: str) -> RunState:
        threads.append(threading.current_thread().name)
        return real_from_json(text)

    monkeypatch.setattr(RunState, "from_json", staticmethod(spying_from_json))
    text = await codec.encode_state(state)
    assert len(text) >= codec.OFFLOAD_TEXT_CHARS
    loaded = await codec.decode_state(text)
    assert loaded.to_json() == text
    assert threads
    assert threads[0] != threading.main_thread().name
