"""Two real `approvals-bot serve` processes on one Postgres database; Slack's requests
go to both. Replica A takes the decision and is SIGKILLed at each step of approve ->
resume -> execute; replica B, still running, takes the run over once A's lease runs out
(without A restarting). Counted in the demo downstream: an idempotent deploy is applied
once whatever step A died at, and a manual restart interrupted mid-call ends uncertain,
applied once, for a person to reconcile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store.records import RunRecord
from tests.polling import until
from tests.replicas.replica_pair import Pair, replica_pair
from tests.slack.fake_slack import FakeSlack
from tests.slack.serve_process import SERVE_CHANNEL
from tests.slack.slack_harness import card_calls

pytestmark = pytest.mark.slow

REQUESTER, APPROVER = "U0REQ", "U0APP"


async def approve_through_a(pair: Pair, fake: FakeSlack, task: str) -> RunRecord:
    """The task is asked of B; the card's Approve and the modal go to A."""
    await pair.drivers["b"].command("/agent", task, user=REQUESTER, channel=SERVE_CHANNEL)
    cards = len(card_calls(fake))
    modals = len(fake.calls_to("views.open"))
    card = (
        await fake.wait_for("chat.postMessage", lambda c: c in card_calls(fake), count=cards + 1)
    )[-1]
    await pair.drivers["a"].click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    opened = (await fake.wait_for("views.open", count=modals + 1))[-1]
    reply = await pair.drivers["a"].submit(opened.args["view"], user=APPROVER, reason="go")
    assert (reply.status, reply.text) == (200, "")  # the vote is committed: the modal closes
    run = (await pair.store.list_runs(limit=1))[0]
    assert run.task == task
    return run


async def run_ends(pair: Pair, run_id: str, status: str) -> RunRecord:
    async def ended() -> RunRecord | None:
        run = await pair.store.get_run(run_id)
        return run if run is not None and run.status == status else None

    return await until(ended, f"run {run_id} never became {status}")


def applied(pair: Pair, tool: str) -> list[dict[str, Any]]:
    """The downstream's applied effects of `tool` (a recognised repeat is not one)."""
    return [line for line in pair.effect_lines() if line["tool"] == tool and not line["duplicate"]]


async def kill_a_when(pair: Pair, step: str, run_id: str) -> None:
    if step == "executing":  # the effect is applied, its result not recorded

        async def effect() -> bool | None:
            keys = {entry.execution_key for entry in await pair.store.ledger_entries(run_id=run_id)}
            applied_here = [line for line in pair.effect_lines() if line["execution_key"] in keys]
            return True if applied_here else None

        await until(effect, "the tool never ran")
    elif step == "executed":  # the result is recorded, the run not saved (if we are quick)

        async def recorded() -> bool | None:
            entries = await pair.store.ledger_entries(run_id=run_id)
            return True if any(entry.state == "succeeded" for entry in entries) else None

        await until(recorded, "the tool's result was never recorded")
    await pair.a.kill()


async def test_an_idempotent_call_is_applied_once_whatever_step_a_replica_dies_at(
    fake_slack: FakeSlack, tmp_path: Path, postgres_url: str
) -> None:
    async with replica_pair(fake_slack, tmp_path, postgres_url) as pair:
        for number, step in enumerate(["answered", "executing", "executed"], start=1):
            version = f"1.2.{number}"
            run = await approve_through_a(pair, fake_slack, f"deploy payments {version}")
            await kill_a_when(pair, step, run.run_id)
            await run_ends(pair, run.run_id, "completed")  # B took it over
            deploys = applied(pair, "deploy_release")
            assert [line["arguments"]["version"] for line in deploys] == [
                f"1.2.{n}" for n in range(1, number + 1)
            ], step  # each applied once
            kinds = [event.kind for event in await pair.store.audit_events(run_id=run.run_id)]
            assert "failed" not in kinds, step
            answers = [c for c in fake_slack.calls_to("chat.postMessage") if version in c.text]
            assert 1 <= len(answers) <= 3, step  # the root, the card, at most one answer
            assert pair.b.process.returncode is None
            await pair.restart_a()


async def test_a_manual_call_interrupted_by_a_dying_replica_ends_uncertain(
    fake_slack: FakeSlack, tmp_path: Path, postgres_url: str
) -> None:
    async with replica_pair(fake_slack, tmp_path, postgres_url) as pair:
        run = await approve_through_a(pair, fake_slack, "restart payments")
        await kill_a_when(pair, "executing", run.run_id)
        await run_ends(pair, run.run_id, "paused")  # waiting for a person to reconcile
        [entry] = await pair.store.ledger_entries(run_id=run.run_id)
        assert (entry.tool_name, entry.state) == ("restart_service", "uncertain")
        assert len(applied(pair, "restart_service")) == 1  # not run again
        (notice,) = await fake_slack.wait_for(
            "chat.postMessage", lambda c: "may or may not have taken effect" in c.text
        )
        assert notice.args.get("thread_ts") is not None
