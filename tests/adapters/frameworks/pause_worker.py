"""A service process that starts a run and stays up once it paused, until the test
kills it with SIGKILL (the process dies between the pause and the decision).

    python -m tests.adapters.frameworks.pause_worker DB_PATH "TASK" AGENT

It prints `paused <run_id>` once the paused run and its approvals are committed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.agents import builtin_registry
from tests.service.service_harness import REQUESTER, close_harness, open_service


async def main(db_path: Path, task: str, agent: str) -> None:
    harness = await open_service(db_path, Path("unused-effects"), registry=builtin_registry())
    try:
        run = await harness.service.start_run(
            agent_name=agent, task=task, requester=REQUESTER, channel="C-ops"
        )
        assert run.status == "paused"
        print(f"paused {run.run_id}", flush=True)
        await asyncio.Event().wait()  # until killed
    finally:
        await close_harness(harness)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
