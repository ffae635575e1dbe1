"""Bench-only: the allocators' own counters of a `serve` process, a line every N seconds.

Started by bench/tracing/sitecustomize.py when SOAK_MALLOC_STATS_DIR is set
(bench/soak.py `--malloc-stats DIR`). Every SOAK_MALLOC_STATS_SECONDS (default 30) it
appends one JSON line to DIR/malloc-<pid>.jsonl:

- `rss_kib`: VmRSS;
- `glibc`: `mallinfo2()` in KiB: `heap` (the main arena's size), `mmapped`, `in_use`,
  `free` (kept by malloc, not given back);
- `pymalloc`: arenas allocated, and the KiB in allocated and in available blocks
  (parsed from `sys._debugmallocstats()`, written to a pipe in place of stderr for the
  call: a log line written at that instant lands in the pipe and is dropped);
- `objects`: the objects the collector tracks, and `grew`: the types whose count grew
  most since the last line.

Split this way, a growing RSS says where it grows: Python objects that stay (`objects`
and `pymalloc` in use grow), pymalloc arenas kept by a few live blocks (arenas grow,
blocks in use do not), or malloc keeping freed pages (`glibc.free` grows, `in_use`
does not). This is how the soak's growth was taken apart (docs/production.md, "Faults
and soak").
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

_GLIBC_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")  # fmt: skip
_PYMALLOC_LINES = {
    "# arenas allocated current": "arenas",
    "# bytes in allocated blocks": "allocated_kib",
    "# bytes in available blocks": "available_kib",
}


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _GLIBC_FIELDS]


def start(directory: Path, every_seconds: float) -> None:
    threading.Thread(
        target=_sample, args=(directory, every_seconds), name="soak-malloc-stats", daemon=True
    ).start()


def _sample(directory: Path, every_seconds: float) -> None:
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = _MallInfo2
    began = time.monotonic()
    previous: collections.Counter[str] = collections.Counter()
    with (directory / f"malloc-{os.getpid()}.jsonl").open("a", encoding="utf-8") as out:
        while True:
            time.sleep(every_seconds)
            info = mallinfo2()
            counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
            line = {
                "seconds": round(time.monotonic() - began),
                "rss_kib": _rss_kib(),
                "glibc": {
                    "heap": info.arena >> 10,
                    "mmapped": info.hblkhd >> 10,
                    "in_use": info.uordblks >> 10,
                    "free": info.fordblks >> 10,
                },
                "pymalloc": _pymalloc(),
                "objects": sum(counts.values()),
                "grew": dict((counts - previous).most_common(10)),
            }
            previous = counts
            out.write(json.dumps(line) + "\n")
            out.flush()


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(next(row for row in status if row.startswith("VmRSS:")).split()[1])


def _pymalloc() -> dict[str, int]:
    """`sys._debugmallocstats()` writes to the C stderr: read it through a pipe."""
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    found: dict[str, int] = {}
    for row in text.splitlines():
        for prefix, name in _PYMALLOC_LINES.items():
            if row.startswith(prefix):
                value = int(row.split("=")[-1].strip().replace(",", ""))
                found[name] = value if name == "arenas" else value >> 10
    return found
