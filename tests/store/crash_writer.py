"""A store writer for the crash test: works until it is killed, printing a line after
every committed operation so the test can choose where the SIGKILL lands.

    python -m tests.store.crash_writer DATABASE ROUND        (APPROVALS_KEYS names the key ring)
"""

from __future__ import annotations

import asyncio
import json
import sys

from store import open_store
from store.records import NewApproval


def progress(label: str) -> None:
    print(label, flush=True)


async def work(database: str, round_number: int) -> None:
    store = await open_store(database)
    progress("open")
    for n in range(1_000_000):
        run_id = f"r{round_number}-{n}"
        state = {"run": run_id, "status": "running", "pad": "x" * (n % 7) * 4000}
        await store.create_run(
            run_id=run_id, agent_name="ops", agent_version="1", schema_version="1.0",
            state_json=json.dumps(state), status="running",
        )  # fmt: skip
        progress("create")
        approvals = [
            NewApproval(
                approval_id=f"{run_id}-{call}",
                run_id=run_id,
                tool_call_id=call,
                tool_name="deploy",
                arguments_digest="d" * 64,
                snapshot="{}",
                requester="U-REQ",
                expires_at=None,
            )
            for call in ("a", "b")
        ]
        await store.add_approvals(approvals)
        progress("add")
        paused = {**state, "status": "paused"}
        await store.save_run_state(
            run_id, expected_version=1, state_json=json.dumps(paused), status="paused",
            schema_version="1.0",
        )  # fmt: skip
        progress("save")
        await store.decide(f"{run_id}-a", decision="approved", decider="U1", reason="ok")
        progress("decide")
        await store.decide(f"{run_id}-b", decision="rejected", decider="U2", reason="no")
        progress("decide")
        await store.transition_run(run_id, expected_status="paused", new_status="resuming")
        progress("transition")
        claim = await store.ledger_claim(
            execution_key=f"{run_id}-a", arguments_digest="d", run_id=run_id,
            tool_call_id="a", tool_name="deploy", owner=f"w{round_number}", lease_seconds=60,
        )  # fmt: skip
        progress("claim")
        await store.ledger_record_result(
            execution_key=f"{run_id}-a", lease_token=claim.lease_token,  # type: ignore[union-attr]
            result=f"result-{run_id}", is_error=False,
        )  # fmt: skip
        progress("record")


if __name__ == "__main__":
    asyncio.run(work(sys.argv[1], int(sys.argv[2])))
