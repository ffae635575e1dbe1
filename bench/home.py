"""App Home and `/approvals list` with many pending approvals in a real SQLite database.

    python bench/home.py [--pending 10000] [--rounds 7] [--per-round 30]
    python bench/home.py --quick       # 2,000 pending, 3 rounds

A fresh database (real SqliteStore, real AES-GCM) gets `--pending` pending approvals,
spread over runs of 50 calls, half requested by the viewer (their own calls are not
theirs to decide, so the read model must skip them), a quarter of them for a tool whose
policy names a user group the viewer is in (looked up through a GroupDirectory that
answers from memory, as the Slack one does from its cache). Every card was posted in the
channel its run started in, and who may see a call is asked of a ChannelDirectory that
answers from memory too (everyone a member: the rows shown are the same as without it).
Then, interleaved in each round, `--per-round` times each:

- `home`: the App Home view for the viewer, built as the bot builds it (pending_for,
  requested_by, recent_decisions through the service, then the Block Kit view);
- `list`: the `/approvals list` answer (first page, 20 rows) as the bot builds it;
- `list-out`: the same for someone outside the group who requested nothing (the read
  model must leave out the group's tool without reading its rows);
- `floor`: a raw indexed SELECT of one page (20 rows) of pending approvals on a plain
  sqlite3 connection to the same file: the least any page costs.

Reported: the median over rounds of each round's median, in ms, and ours/floor. Target:
home and list <= 100 ms median at 10,000 pending.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.demo import default_registry
from bot.policy.loading import parse_policy
from bot.review.snapshot import review_snapshot
from bot.runtime import RunState
from bot.service import ApprovalService, Location
from bot.service.codec import encode_state
from bot.service.events import Event
from bot.slack.app import list_text
from bot.slack.home import build_home
from bot.tasks import TaskOwner
from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import NewApproval

VIEWER = "U0VIEWER"
OTHER = "U0REQUEST"
OUTSIDER = "U0OUTSIDE"
GROUP = "S0RELEASE"
CALLS_PER_RUN = 50
CHANNEL = "C0OPS"
POLICY = f"""
[tools.deploy_release]
approvers = ["{GROUP}"]
required_approvals = 2
"""
FLOOR_SQL = (
    "SELECT * FROM approvals INDEXED BY approvals_pending_page "
    "WHERE status = 'pending' ORDER BY created_at, approval_id LIMIT 20"
)


class MemoryGroups:
    """Group membership as the Slack directory serves it from its cache."""

    async def members(self, group_id: str) -> frozenset[str]:
        return frozenset({VIEWER}) if group_id == GROUP else frozenset()


class MemoryChannels:
    """Channel membership as the Slack directory serves it from its cache."""

    async def is_member(self, channel_id: str, user: str) -> bool:
        return True


class SilentNotifier:
    """The service's notifier; nothing is posted while reading."""

    async def notify(self, event: Event) -> Location | None:
        return None


async def seed(store: Store, pending: int) -> None:
    start = datetime.now(UTC) - timedelta(minutes=30)
    state_json = await encode_state(RunState(run_id="seed", agent_name="ops", agent_version="1"))
    made = 0
    while made < pending:
        run_id = uuid.uuid4().hex
        requester = VIEWER if (made // CALLS_PER_RUN) % 2 == 0 else OTHER
        await store.create_run(
            run_id=run_id,
            agent_name="ops",
            agent_version="1",
            schema_version="1.0",
            state_json=state_json,
            status="paused",
            channel=CHANNEL,
            requester=requester,
        )
        batch = [
            _approval(run_id, requester, made + index, start)
            for index in range(min(CALLS_PER_RUN, pending - made))
        ]
        for record in await store.add_approvals(batch):
            await store.set_approval_message(record.approval_id, channel=CHANNEL, ts="1.0")
        made += len(batch)


def _approval(run_id: str, requester: str, number: int, start: datetime) -> NewApproval:
    tool = "deploy_release" if number % 4 == 0 else "set_config"
    arguments = {"service": f"svc-{number}", "version": f"1.{number}.0"}
    # A stand-in for the call's keyed digest (the bench measures reading, not hashing).
    snapshot = review_snapshot(tool, arguments, digest=f"{number:064x}")
    return NewApproval(
        approval_id=uuid.uuid4().hex,
        run_id=run_id,
        tool_call_id=f"call_{number}",
        tool_name=tool,
        arguments_digest=snapshot.digest,
        snapshot=snapshot.to_json(),
        requester=requester,
        expires_at=start + timedelta(hours=24),
        required_approvals=2 if tool == "deploy_release" else 1,
    )


async def timed(action: Callable[[], Awaitable[object]], times: int) -> float:
    samples = []
    for _ in range(times):
        began = time.perf_counter()
        await action()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


async def floor_page(connection: sqlite3.Connection) -> None:
    rows = connection.execute(FLOOR_SQL).fetchall()
    assert len(rows) == 20


async def main(pending: int, rounds: int, per_round: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "bench.db"
        store = await open_store(str(database), keyring=KeyRing([generate_key("k1")]), environ={})
        tasks = TaskOwner()
        service = ApprovalService(
            store=store,
            registry=default_registry(),  # the ops agent: deploy_release, set_config, ...
            notifier=SilentNotifier(),
            dependencies={},
            tasks=tasks,
            worker_id="bench",
            policy=parse_policy(POLICY, source="bench-policy"),
            groups=MemoryGroups(),
            channels=MemoryChannels(),
        )
        raw = sqlite3.connect(database)
        try:
            began = time.perf_counter()
            await seed(store, pending)
            print(f"seeded {pending} pending approvals in {time.perf_counter() - began:.1f} s")
            view = await build_home(service, VIEWER)
            assert len(view["blocks"]) <= 100
            assert "Nothing waits" not in str(view)
            results: dict[str, list[float]] = {"home": [], "list": [], "list-out": [], "floor": []}
            for _ in range(rounds):
                results["home"].append(await timed(lambda: build_home(service, VIEWER), per_round))
                results["list"].append(
                    await timed(lambda: list_text(service, VIEWER, 1), per_round)
                )
                results["list-out"].append(
                    await timed(lambda: list_text(service, OUTSIDER, 1), per_round)
                )
                results["floor"].append(await timed(lambda: floor_page(raw), per_round))
            report(pending, results)
        finally:
            raw.close()
            await service.aclose()
            await store.close()


def report(pending: int, results: dict[str, list[float]]) -> None:
    floor = statistics.median(results["floor"])
    print(f"{pending} pending approvals, median over rounds of per-round medians:")
    for name in ("home", "list", "list-out", "floor"):
        value = statistics.median(results[name])
        verdict = ""
        if name != "floor":
            verdict = "  (target <= 100 ms: " + ("met)" if value <= 100 else "MISSED)")
        print(f"  {name:8s} {value:8.2f} ms  {value / floor:7.1f}x floor{verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.pending, args.rounds = 2_000, 3
    asyncio.run(main(args.pending, args.rounds, args.per_round))
    sys.exit(0)
