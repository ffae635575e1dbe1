"""Committing a bulk decision against the same calls decided one by one, in a real SQLite
database through the real service.

    python bench/bulk_decisions.py [--calls 30] [--rounds 7]

Each round seeds `2 x --calls` pending calls of one tool (each in its own paused run, in
a channel whose members a ChannelDirectory answers from memory, as the Slack one does
from its cache), then times (each first in every other round):

- `bulk`: `record_decisions` of `--calls` calls with one reason (what the bot commits
  before it answers the bulk modal);
- `floor`: `record_decision` of the other `--calls` calls, one after another (the single
  decision's path, which the bulk decision takes for each call).

Reported: the median over rounds, in ms, with bulk/floor, and bulk against the 2 s the
bot gives a submission's commit before it answers Slack (SUBMISSION_BUDGET_SECONDS).
Only the commits are timed: cards and resumes follow after the answer either way.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.demo import default_registry
from bot.review.snapshot import review_snapshot
from bot.runtime import RunState
from bot.service import ApprovalService, Location
from bot.service.bulk import BulkItem
from bot.service.codec import encode_state
from bot.service.events import Event
from bot.slack.interactions import SUBMISSION_BUDGET_SECONDS
from bot.tasks import TaskOwner
from store import open_store
from store.api import Store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import ApprovalRecord, NewApproval

REQUESTER = "U0REQUEST"
APPROVER = "U0APPROVE"
CHANNEL = "C0OPS"
TOOL = "set_config"


class MemoryChannels:
    async def is_member(self, channel_id: str, user: str) -> bool:
        return True


class SilentNotifier:
    async def notify(self, event: Event) -> Location | None:
        return None


async def seed(store: Store, count: int) -> list[ApprovalRecord]:
    state_json = await encode_state(RunState(run_id="seed", agent_name="ops", agent_version="1"))
    made: list[ApprovalRecord] = []
    for number in range(count):
        run_id = uuid.uuid4().hex
        await store.create_run(
            run_id=run_id,
            agent_name="ops",
            agent_version="1",
            schema_version="1.0",
            state_json=state_json,
            status="paused",
            channel=CHANNEL,
            requester=REQUESTER,
        )
        arguments = {"service": f"svc-{number}", "key": "replicas", "value": str(number)}
        snapshot = review_snapshot(TOOL, arguments, digest=f"{number:064x}")
        new = NewApproval(
            approval_id=uuid.uuid4().hex[:16],
            run_id=run_id,
            tool_call_id=f"call_{number}",
            tool_name=TOOL,
            arguments_digest=snapshot.digest,
            snapshot=snapshot.to_json(),
            requester=REQUESTER,
            expires_at=datetime.now(UTC) + timedelta(hours=24),
        )
        made += await store.add_approvals([new])
    return made


async def main(calls: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = await open_store(
            str(Path(directory) / "bench.db"), keyring=KeyRing([generate_key("k1")]), environ={}
        )
        service = ApprovalService(
            store=store,
            registry=default_registry(),
            notifier=SilentNotifier(),
            dependencies={},
            tasks=TaskOwner(),
            worker_id="bench",
            channels=MemoryChannels(),
        )
        results: dict[str, list[float]] = {"bulk": [], "floor": []}
        try:
            for round_number in range(rounds):
                pending = await seed(store, 2 * calls)
                bulk, single = pending[:calls], pending[calls:]
                steps = [("bulk", _bulk(service, bulk)), ("floor", _one_by_one(service, single))]
                if round_number % 2:  # each goes first in every other round
                    steps.reverse()
                for name, step in steps:
                    began = time.perf_counter()
                    await step
                    results[name].append((time.perf_counter() - began) * 1000)
        finally:
            await service.aclose()
            await store.close()
    bulk, floor = statistics.median(results["bulk"]), statistics.median(results["floor"])
    budget = SUBMISSION_BUDGET_SECONDS * 1000
    print(f"{calls} calls per decision, median over {rounds} rounds:")
    share = f"{bulk / budget:.1%} of the {budget:.0f} ms budget"
    print(f"  bulk   {bulk:8.1f} ms  {bulk / floor:5.2f}x floor  ({share})")
    print(f"  floor  {floor:8.1f} ms  1.00x floor  ({calls} single decisions, one after another)")


async def _bulk(service: ApprovalService, approvals: list[ApprovalRecord]) -> None:
    recorded = await service.record_decisions(
        tool_name=TOOL,
        items=[BulkItem(approval_id=a.approval_id, digest=a.arguments_digest) for a in approvals],
        approve=True,
        decider=APPROVER,
        reason="bench",
    )
    assert len(recorded.recorded) == len(approvals), recorded.refused


async def _one_by_one(service: ApprovalService, approvals: list[ApprovalRecord]) -> None:
    for approval in approvals:
        await service.record_decision(
            approval.approval_id,
            approve=True,
            decider=APPROVER,
            reason="bench",
            digest=approval.arguments_digest,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
    sys.exit(0)
