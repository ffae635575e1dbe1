"""A service process that records a decision and is killed before it finishes it (the
card update and the resume), for test_decision_commit.py.

    python -m tests.service.record_worker DB_PATH

It starts `deploy payments 1.2.3`, commits an approval of its one call with
`record_decision`, prints `recorded <run_id> <approval_id>` and waits for SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.service.service_harness import APPROVER, close_harness, open_service, start


async def main(db_path: Path) -> None:
    harness = await open_service(db_path, Path("unused-effects"))
    try:
        run = await start(harness)
        [approval] = await harness.pending(run.run_id)
        await harness.service.record_decision(
            approval.approval_id, approve=True, decider=APPROVER, reason="recorded, then killed"
        )
        print(f"recorded {run.run_id} {approval.approval_id}", flush=True)
        await asyncio.Event().wait()  # until SIGKILL
    finally:
        await close_harness(harness)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
