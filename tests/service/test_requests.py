"""Request memory through the service: concurrent sightings share writes, and of every
sighting of one key, on one worker or two on one database, exactly one is the first."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bot.errors import InputError
from tests.service.service_harness import Harness


async def test_concurrent_sightings_are_answered_once_per_key(harness: Harness) -> None:
    keys = [f"signature:{index:02d}" for index in range(10)] * 5
    answers = await asyncio.gather(
        *(harness.service.remember_request(key, ttl_seconds=300) for key in keys)
    )
    firsts = sorted(key for key, first in zip(keys, answers, strict=True) if first)
    assert firsts == sorted(set(keys))
    assert await harness.service.remember_request("signature:00", ttl_seconds=300) is False


async def test_two_workers_on_one_database_see_a_key_first_once(
    open_harness: Callable[..., Any],
) -> None:
    one, two = await open_harness(), await open_harness(worker_id="second-worker")
    answers = await asyncio.gather(
        *(
            worker.service.remember_request("event:Ev1", ttl_seconds=60)
            for _ in range(20)
            for worker in (one, two)
        )
    )
    assert sorted(answers) == [False] * 39 + [True]


async def test_a_refused_sighting_is_an_error_for_its_caller(harness: Harness) -> None:
    with pytest.raises(InputError, match="key of 1-200"):
        await harness.service.remember_request("", ttl_seconds=60)
    assert await harness.service.remember_request("event:Ev2", ttl_seconds=60) is True
