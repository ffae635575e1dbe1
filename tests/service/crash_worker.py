"""A service process for the crash tests: start a run, approve it, resume it, and hang in
the tool's latency window until the test kills it with SIGKILL.

    python -m tests.service.crash_worker DB_PATH "TASK" [AGENT]

AGENT (default: ops) is any agent of the built-in registry (ops-openai with the SDK).

Environment: APPROVALS_DEMO_EFFECTS, OPS_DEMO_LATENCY (large), OPS_API_TOKEN.
It prints `resuming <run_id>` once the resume has been claimed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.agents import builtin_registry
from tests.service.service_harness import APPROVER, REQUESTER, close_harness, open_service


async def main(db_path: Path, task: str, agent: str | None) -> None:
    harness = await open_service(db_path, Path("unused-effects"), registry=builtin_registry())
    try:
        run = await harness.service.start_run(
            agent_name=agent, task=task, requester=REQUESTER, channel="C-ops"
        )
        assert run.status == "paused"
        for approval in await harness.pending(run.run_id):
            await harness.service.decide(
                approval.approval_id, approve=True, decider=APPROVER, reason="crash test"
            )
        print(f"resuming {run.run_id}", flush=True)
        await harness.service.drain()  # the tool sleeps here until we are killed
    finally:
        await close_harness(harness)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
