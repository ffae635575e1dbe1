"""Bench-only: tracemalloc snapshots of a `serve` process started by bench/soak.py.

bench/soak.py `--trace-memory DIR` puts this directory first on the server's PYTHONPATH,
so Python imports this module at start-up (the `site` hook), and sets
SOAK_TRACE_MEMORY_DIR. A daemon thread starts tracing SOAK_TRACE_MEMORY_START seconds
in (default 20: past the imports and the start-up, which tracing would slow past the
30 s a start may take; what they allocate is not traced, and a leak is what grows
after), 10 frames deep, then writes a snapshot every SOAK_TRACE_MEMORY_SECONDS (default
60) to DIR/snapshot-<seconds>.pickle, seconds counted from the process start. Nothing
of this is in the bot: a production process never pays for it.

With SOAK_MALLOC_STATS_DIR set (bench/soak.py `--malloc-stats DIR`) it also starts
bench/tracing/malloc_stats.py: the allocators' own counters, a line every 30 s.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path

_directory = os.environ.get("SOAK_TRACE_MEMORY_DIR")
if _directory:
    _every = float(os.environ.get("SOAK_TRACE_MEMORY_SECONDS", "60"))
    _start = float(os.environ.get("SOAK_TRACE_MEMORY_START", "20"))
    _began = time.monotonic()

    def _snapshots(directory: Path) -> None:
        time.sleep(_start)
        tracemalloc.start(10)
        while True:
            time.sleep(_every)
            elapsed = int(time.monotonic() - _began)
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)]
            )
            partial = directory / f".snapshot-{elapsed:06d}.pickle"
            snapshot.dump(str(partial))
            partial.rename(directory / f"snapshot-{elapsed:06d}.pickle")

    threading.Thread(
        target=_snapshots, args=(Path(_directory),), name="soak-tracemalloc", daemon=True
    ).start()

_malloc_stats = os.environ.get("SOAK_MALLOC_STATS_DIR")
if _malloc_stats:
    import malloc_stats  # beside this file, on the same PYTHONPATH

    malloc_stats.start(
        Path(_malloc_stats), float(os.environ.get("SOAK_MALLOC_STATS_SECONDS", "30"))
    )
