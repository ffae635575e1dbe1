"""Review snapshot cost: redaction and rendering against the digest floor.

    python bench/review_snapshot.py            # all shapes
    python bench/review_snapshot.py --quick    # fewer samples

For each argument shape, the median of repeated samples of this thread's CPU time:
- floor: the call's keyed digest (`call_digest`: canonical arguments + HMAC-SHA256, the
  least any snapshot costs);
- snapshot: the digest + `review_snapshot(...)` (credential scan + redaction);
- render: `snapshot.render_text()` (pretty JSON, escape, fit to the Block Kit limit).
Ratios are against the floor measured in the same run, samples interleaved. The
`hostile` shapes are texts built to make a careless scanner quadratic.

Prints a table; exits non-zero only when something crashes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bot.canonical import call_digest
from bot.review.snapshot import review_snapshot

SLACK_TOKEN = "xoxb-" + "2718281828-3141592653-AbCdEfGhIjKlMnOp"


def shapes() -> dict[str, dict[str, Any]]:
    config = {f"setting_{n}": f"value {n} for the service" for n in range(40)}
    config |= {"db_password": "hunter2", "webhook": f"notify {SLACK_TOKEN}"}
    return {
        "deploy (2 fields)": {"service": "payments", "version": "1.2.3"},
        "config (42 fields)": {"service": "payments", "settings": config},
        "200 KB text": {"service": "payments", "notes": "release notes & <fixes> " * 8500},
        "hostile 1 MB a=b": {"text": "a=b " * 250_000},
        "hostile 1 MB letters": {"text": "a" * 1_000_000},
        "hostile 1 MB key=v": {"text": "key=v " * 170_000},
        "hostile 1 MB pwd=v": {"text": "pwd=v " * 170_000},
    }


def per_call(action: Callable[[], Any], number: int) -> float:
    start = time.thread_time()
    for _ in range(number):
        action()
    return (time.thread_time() - start) / number


KEY = bytes(range(32))


def digest(arguments: dict[str, Any]) -> str:
    return call_digest(
        KEY,
        agent_name="ops",
        agent_version="1",
        tool_name="tool",
        execution_key="0" * 32,
        arguments=arguments,
    )


def snapshot_of(arguments: dict[str, Any]) -> Any:
    return review_snapshot("tool", arguments, digest=digest(arguments))


def measure(arguments: dict[str, Any], samples: int) -> tuple[float, float, float]:
    snapshot = snapshot_of(arguments)
    number = max(1, int(0.02 / max(per_call(lambda: snapshot_of(arguments), 1), 1e-6)))
    floor, snap, render = [], [], []
    for _ in range(samples):
        floor.append(per_call(lambda: digest(arguments), number))
        snap.append(per_call(lambda: snapshot_of(arguments), number))
        render.append(per_call(snapshot.render_text, number))
    return statistics.median(floor), statistics.median(snap), statistics.median(render)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    samples = 5 if parser.parse_args().quick else 15
    print(f"{'shape':<22} {'floor':>10} {'snapshot':>10} {'x floor':>8} {'render':>10}")
    for name, arguments in shapes().items():
        floor, snap, render = measure(arguments, samples)
        print(
            f"{name:<22} {floor * 1e6:>8.1f}us {snap * 1e6:>8.1f}us "
            f"{snap / floor:>7.1f}x {render * 1e6:>8.1f}us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
