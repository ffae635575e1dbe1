"""bench/approve_to_effect.py's rounds counted in instructions: what each approved call
costs the server process (all its threads), from the sixteen submissions sent to the
last tool run, repeatable where CPU time and latency move with the machine's load.

    python bench/approve_to_effect_callgrind.py [--rounds 4]

Needs valgrind (with its headers) and a C compiler. It compiles a small shim calling
callgrind's client requests, runs the bench under `valgrind --tool=callgrind` with the
counters zeroed right before each round's submissions and dumped when its last tool
ran, and prints each round's instructions per approved call (a warm-up round of each
app is left out). The fake Slack and the load generator run outside valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHIM = r"""
#include <valgrind/callgrind.h>
void zero(void) { CALLGRIND_ZERO_STATS; }
void dump(const char *tag) { CALLGRIND_DUMP_STATS_AT(tag); }
"""
BATCH = 16


def counted(shim: Path) -> Any:
    """The bench's `one_round` with the counters zeroed before the submissions and dumped
    (named by the round's tag) once the last tool ran."""
    import approve_to_effect as bench

    calls = ctypes.CDLL(str(shim))

    async def one_round(url: str, surface: Any, load: Any, moments: Any, size: int,
                        tag: str, user: int) -> list[float]:  # fmt: skip
        await bench.pending_batch(surface, moments, size, tag)
        await surface.tasks.drain(60)
        moments.reset(size)
        batch = [
            bench.submission(approval, user + n) for n, approval in enumerate(moments.service_of)
        ]
        started = time.process_time()
        calls.zero()
        await load.measure(url, batch, size)
        async with asyncio.timeout(600):
            await moments.done.wait()
        calls.dump(tag.encode())
        moments.cpu_seconds.append((time.process_time() - started) / size)
        await surface.tasks.drain(600)
        latencies: list[float] = moments.latencies()
        return latencies

    bench.one_round = one_round
    return bench


def per_call(out: Path) -> dict[str, list[float]]:
    """Each measured round's instructions per approved call (M), by app, in order."""
    found: list[tuple[int, str, float]] = []
    for dump in out.glob("cg.out.*.*"):
        text = dump.read_text(errors="replace")
        tag = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.MULTILINE)
        total = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if tag and total and not tag.group(1).startswith("warm"):
            part = int(dump.name.rsplit(".", 1)[1])
            found.append((part, tag.group(1), int(total.group(1)) / BATCH / 1e6))
    rounds: dict[str, list[float]] = {"ours": [], "floor": []}
    for _, tag, value in sorted(found):
        rounds[tag.rsplit("-", 1)[1]].append(value)
    return rounds


def main(rounds: int) -> int:
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install -y valgrind)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "shim.c").write_text(SHIM)
        shim = work / "shim.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", shim, work / "shim.c"], check=True)
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work}/cg.out.%p",
             sys.executable, __file__, "--inner", str(shim), "--rounds", str(rounds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        counts = per_call(work)
    print(f"instructions per approved call, each round ({BATCH} approved at once):")
    for app, values in counts.items():
        if values:
            each = ", ".join(f"{value:.2f}" for value in values)
            print(f"  {app:>5}: {each} M (median {statistics.median(values):.2f} M)")
    return 0 if counts["ours"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="measured rounds per app")
    parser.add_argument("--inner", help=argparse.SUPPRESS)  # run under valgrind: the shim
    args = parser.parse_args()
    if args.inner:
        sys.exit(asyncio.run(counted(Path(args.inner)).main(BATCH, args.rounds)))
    sys.exit(main(args.rounds))
