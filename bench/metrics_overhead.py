"""What measuring costs: the same requests through Bolt with and without the metrics.

    python bench/metrics_overhead.py [--requests 20000] [--rounds 5]
    python bench/metrics_overhead.py --quick    # 5,000 requests, 3 rounds

Two Bolt apps with the same no-op Approve listener (ack only), dispatched in-process
(no HTTP, so the difference is not drowned in socket time): `floor` has no middleware,
`metered` has the ack timer (bot.slack.observed.TimeAcks) on a Metrics registry. The
apps take turns, round by round, on one event loop, so machine noise hits both alike.
Reported: the median over rounds of the mean time per request, and metered/floor.

Then the business events: the telemetry of one approved call's whole life (run started,
paused, approval requested and decided, resume attempted, execution claimed and
succeeded, run completed, a state size) against the same events with logging off and
no registry (the floor: the calls alone), per run, median over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.metrics import Metrics
from bot.service.telemetry import CallIds, Telemetry
from bot.slack.observed import TimeAcks
from store.records import ApprovalRecord, RunRecord

ACTION_ID = "approval_approve"
BODY = (
    "payload=%7B%22type%22%3A%22block_actions%22%2C%22user%22%3A%7B%22id%22%3A%22U1%22%7D%2C"
    "%22actions%22%3A%5B%7B%22action_id%22%3A%22approval_approve%22%2C%22value%22%3A%22a1%22"
    "%7D%5D%2C%22team%22%3A%7B%22id%22%3A%22T1%22%7D%7D"
)


async def authorize(**_: object) -> AuthorizeResult:
    return AuthorizeResult(enterprise_id=None, team_id="T1", bot_token="xoxb-bench")


def bolt_app(metrics: Metrics | None) -> AsyncApp:
    app = AsyncApp(
        signing_secret="s",
        authorize=authorize,  # no auth.test: nothing leaves the process
        process_before_response=True,
        request_verification_enabled=False,
    )
    if metrics is not None:
        app.use(TimeAcks(metrics))

    async def on_click(ack: Callable[[], Awaitable[None]]) -> None:
        await ack()

    app.action(ACTION_ID)(on_click)
    return app


async def per_request(app: AsyncApp, requests: int) -> float:
    headers = {"content-type": ["application/x-www-form-urlencoded"]}
    started = time.perf_counter()
    for _ in range(requests):
        response = await app.async_dispatch(AsyncBoltRequest(body=BODY, headers=headers))
        assert response.status == 200, response.body
    return (time.perf_counter() - started) / requests


def one_life(telemetry: Telemetry, run: RunRecord, approval: ApprovalRecord) -> None:
    call = CallIds(run_id=run.run_id, tool_call_id="c1", execution_key="k1", approval_id="a1")
    telemetry.run_started(run)
    telemetry.state_saved(size=6000)
    telemetry.run_paused(run, waiting=1)
    telemetry.approval_requested(approval)
    telemetry.approval_closed(approval)
    telemetry.resume_attempted(run.run_id, attempt=1)
    telemetry.execution_claimed(call, attempt=1)
    telemetry.execution_recorded(call, attempt=1, is_error=False)
    telemetry.run_ended(run, status="completed")


def records() -> tuple[RunRecord, ApprovalRecord]:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    run = RunRecord(
        run_id="r1", agent_name="ops", agent_version="1", schema_version="1", status="paused",
        version=1, key_id="k1", blob_digest="d", channel="C1", thread_ts=None, requester="U1",
        created_at=now,
        updated_at=now, origin="slack", task="deploy",
    )  # fmt: skip
    approval = ApprovalRecord(
        approval_id="a1", run_id="r1", tool_call_id="c1", tool_name="deploy",
        arguments_digest="d", snapshot="{}", status="approved", requester="U1",
        decider="U2", reason="ok", message=None, created_at=now, decided_at=now,
        expires_at=None, revoked_at=None, slack_channel=None, slack_ts=None,
    )  # fmt: skip
    return run, approval


def per_life(telemetry: Telemetry, lives: int) -> float:
    run, approval = records()
    started = time.perf_counter()
    for _ in range(lives):
        one_life(telemetry, run, approval)
    return (time.perf_counter() - started) / lives


async def main(requests: int, rounds: int) -> None:
    floor_app, metered_app = bolt_app(None), bolt_app(Metrics())
    floor: list[float] = []
    metered: list[float] = []
    await per_request(floor_app, 200)  # warm both up
    await per_request(metered_app, 200)
    for _ in range(rounds):
        floor.append(await per_request(floor_app, requests))
        metered.append(await per_request(metered_app, requests))
    base, ours = statistics.median(floor), statistics.median(metered)
    print(f"Bolt dispatch of an Approve click, {rounds} rounds of {requests} (median):")
    print(f"  floor   {base * 1e6:8.1f} us/request")
    print(f"  metered {ours * 1e6:8.1f} us/request   metered/floor {ours / base:.3f}x")

    logging.basicConfig(handlers=[logging.NullHandler()], level=logging.INFO)
    quiet, counted = [], []
    lives = max(1000, requests // 4)
    events = logging.getLogger("approvals.events")
    for _ in range(rounds):
        events.disabled = True
        quiet.append(per_life(Telemetry(None), lives))
        events.disabled = False
        counted.append(per_life(Telemetry(Metrics()), lives))
    base, ours = statistics.median(quiet), statistics.median(counted)
    print(f"\nTelemetry of one approved call's life (9 events), {rounds} rounds of {lives}:")
    print(f"  calls alone (logging off, no registry) {base * 1e6:8.1f} us/life")
    print(f"  logged at INFO (null handler) + counted {ours * 1e6:8.1f} us/life")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    requests, rounds = (5_000, 3) if args.quick else (args.requests, args.rounds)
    asyncio.run(main(requests, rounds))
