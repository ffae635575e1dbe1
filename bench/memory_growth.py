"""What grew between two tracemalloc snapshots of a `serve` process (bench/soak.py
`--trace-memory DIR` writes them, bench/tracing/sitecustomize.py takes them).

    python bench/memory_growth.py DIR [--since-seconds 60] [--top 15]

Compares the first snapshot taken at or after `--since-seconds` (past the warm-up) with
the last one: the lines whose allocations grew most, then the tracebacks of the top few.
Growth that keeps rising from snapshot to snapshot is a leak; growth that stops is warm-up
(caches and pools filling): `--series` prints the traced total of every snapshot.
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path


def snapshots(directory: Path) -> list[tuple[int, Path]]:
    found = sorted(directory.glob("snapshot-*.pickle"))
    return [(int(path.stem.split("-")[1]), path) for path in found]


def traced_total(path: Path) -> int:
    return sum(stat.size for stat in tracemalloc.Snapshot.load(str(path)).statistics("filename"))


def report(directory: Path, *, since_seconds: float, top: int, series: bool) -> int:
    taken = snapshots(directory)
    later = [(at, path) for at, path in taken if at >= since_seconds]
    if len(later) < 2:
        print(f"memory: fewer than two snapshots after {since_seconds:g} s in {directory}")
        return 1
    (first_at, first), (last_at, last) = later[0], later[-1]
    if series:
        print("memory traced by snapshot (s: MiB): " + ", ".join(
            f"{at}: {traced_total(path) / 2**20:.1f}" for at, path in taken))  # fmt: skip
    old, new = tracemalloc.Snapshot.load(str(first)), tracemalloc.Snapshot.load(str(last))
    by_line = new.compare_to(old, "lineno")
    grown = sum(stat.size_diff for stat in by_line)
    print(f"memory traced: {sum(s.size for s in old.statistics('filename')) / 2**20:.1f} MiB "
          f"at {first_at} s, {sum(s.size for s in new.statistics('filename')) / 2**20:.1f} MiB "
          f"at {last_at} s ({grown / 2**20:+.2f} MiB); the lines that grew most:")  # fmt: skip
    for stat in by_line[:top]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  "
              f"{frame.filename}:{frame.lineno}")  # fmt: skip
    for stat in new.compare_to(old, "traceback")[:3]:
        print(f"  {stat.size_diff / 1024:+.1f} KiB, {stat.count_diff:+d} blocks, allocated at:")
        for line in stat.traceback.format(limit=8, most_recent_first=True):
            print(f"    {line}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--since-seconds", type=float, default=60.0)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--series", action="store_true")
    args = parser.parse_args()
    return report(args.directory, since_seconds=args.since_seconds, top=args.top,
                  series=args.series)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
