"""One of several processes writing to one Postgres database at once: runs, approvals,
decisions on approvals every writer races for, and plain audit events. Prints how many
of the shared approvals it won, as JSON, when done.

    python -m tests.store.concurrent_writer URL NAME ROUNDS SHARED   (APPROVALS_KEYS set)
"""

from __future__ import annotations

import asyncio
import json
import sys

from store import open_store
from store.records import NewApproval


async def work(url: str, name: str, rounds: int, shared: int) -> dict[str, int]:
    store = await open_store(url)
    won = 0
    try:
        for n in range(rounds):
            run_id = f"{name}-{n}"
            await store.create_run(
                run_id=run_id, agent_name="ops", agent_version="1", schema_version="1.0",
                state_json=json.dumps({"n": n}), status="paused",
            )  # fmt: skip
            [approval] = await store.add_approvals(
                [
                    NewApproval(
                        approval_id=f"{run_id}-a",
                        run_id=run_id,
                        tool_call_id="c",
                        tool_name="deploy",
                        arguments_digest="d" * 64,
                        snapshot="{}",
                        requester="U-REQ",
                        expires_at=None,
                    )
                ]
            )
            await store.vote(
                approval.approval_id, decision="approved", voter=name, digest="d" * 64,
                reason="ok",
            )  # fmt: skip
            await store.append_audit("note", actor=name, detail={"n": n})
            if n < shared:
                outcome = await store.decide(
                    f"shared-{n}", decision="approved", decider=name, reason="race"
                )
                won += outcome.won
    finally:
        await store.close()
    return {"won": won}


if __name__ == "__main__":
    url, name, rounds, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(asyncio.run(work(url, name, rounds, shared))), flush=True)
