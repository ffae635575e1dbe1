"""The serve process gives freed heap pages back to the system on a cadence
(bot.commands.freed_memory): a soak's RSS grew with pages malloc kept after their blocks
were freed."""

from __future__ import annotations

import asyncio

from bot.commands.freed_memory import heap_trimmer, returning_freed_memory


def _resident_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


def test_glibc_gives_back_the_pages_of_freed_blocks_its_heap_kept() -> None:
    trim = heap_trimmer()
    assert trim is not None  # the machines this runs on use glibc
    kept, freed = [], []
    for _ in range(10_000):  # freed 16 KiB blocks (under the mmap threshold: on the heap)
        freed.append(bytearray(16 * 1024))  # between kept ones: the heap's top stays
        kept.append(bytearray(600))
    del freed
    before = _resident_kib()
    trim()
    after = _resident_kib()
    assert before - after > 100 * 1024, (before, after)  # ~160 MiB were freed
    del kept


async def test_the_trim_runs_on_its_cadence_and_stops_with_the_block() -> None:
    calls = 0
    twice = asyncio.Event()

    def counted() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            twice.set()

    async with returning_freed_memory(every_seconds=0.01, trim=counted):
        await asyncio.wait_for(twice.wait(), 5)
    assert "freed-memory" not in {task.get_name() for task in asyncio.all_tasks()}
