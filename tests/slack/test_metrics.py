"""/metrics of a real server after real flows: the bot's own registry, scraped over HTTP
from the aiohttp server in front of the Bolt app, after people approved, rejected and
let a call expire, after a crash left a result to reuse and a call uncertain, after a
state was tampered with. Each business event counts once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics import Metrics
from bot.runtime import CURRENT_SCHEMA_VERSION
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    FakeClock,
    card_calls,
    open_modal,
    start_bot,
    stop_bot,
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(bot: Bot) -> Samples:
    """GET /metrics, parsed: (sample name, labels) -> value."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{bot.base_url}/metrics") as response,
    ):
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
async def metered(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> AsyncIterator[tuple[Bot, FakeClock]]:
    clock = FakeClock()
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, clock=clock, metrics=Metrics()
    )
    try:
        yield bot, clock
    finally:
        await stop_bot(bot, runner, session)


async def start(bot: Bot, text: str = "deploy payments 1.2.3") -> Call:
    """/agent <text>, as the next run of this bot; its review card once posted."""
    roots = len([c for c in bot.fake.calls_to("chat.postMessage") if "thread_ts" not in c.args])
    reply = await bot.driver.command("/agent", text, user=REQUESTER, channel=CHANNEL)
    assert reply.status == 200
    found = await bot.fake.wait_for(
        "chat.postMessage", lambda c: "thread_ts" not in c.args, count=roots + 1
    )
    thread = found[-1].answer["ts"]
    (card,) = await bot.fake.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == thread and c in card_calls(bot.fake),
    )
    return card


async def decide(bot: Bot, card: Call, action: str, reason: str) -> None:
    view = await open_modal(bot, card, action, user=APPROVER)
    reply = await bot.driver.submit(view, user=APPROVER, reason=reason)
    assert (reply.status, reply.text) == (200, "")
    await bot.settle()


async def test_approve_reject_and_expire_each_count_once(
    metered: tuple[Bot, FakeClock],
) -> None:
    bot, clock = metered
    await decide(bot, await start(bot), "Approve", "CHG-1")
    await decide(bot, await start(bot), "Reject", "freeze")
    await start(bot)
    clock.advance(timedelta(hours=1))

    waiting = await scrape(bot)
    assert value(waiting, "approval_pending_oldest_age_seconds") == 3600.0

    clock.advance(timedelta(hours=24))
    await bot.service.sweep()
    await bot.settle()
    samples = await scrape(bot)

    assert value(samples, "approval_requested_total") == 3
    for outcome in ("approved", "rejected", "expired"):
        assert value(samples, "approval_decisions_total", outcome=outcome) == 1
        assert value(samples, "approval_pending_age_seconds_count", outcome=outcome) == 1
    # the expired one waited exactly its lifetime (24 h by default)
    assert value(samples, "approval_pending_age_seconds_sum", outcome="expired") == 86400.0
    assert value(samples, "approval_expired_total") == 1
    assert value(samples, "approval_pending_oldest_age_seconds") == 0.0
    assert value(samples, "runs_total", event="started") == 3
    assert value(samples, "runs_total", event="paused") == 3
    assert value(samples, "runs_total", event="completed") == 3
    assert value(samples, "resume_attempts_total") == 3
    assert value(samples, "tool_executions_total", outcome="claimed") == 1
    assert value(samples, "tool_executions_total", outcome="succeeded") == 1
    assert value(samples, "idempotency_reuse_total") == 0
    assert value(samples, "state_blob_bytes_count") == 9  # 3 starts, 3 pauses, 3 ends
    assert value(samples, "slack_ack_latency_seconds_count", kind="command") == 3
    assert value(samples, "slack_ack_latency_seconds_count", kind="block_actions") == 2
    assert value(samples, "slack_ack_latency_seconds_count", kind="view_submission") == 2


async def test_time_to_decision_by_tool_and_outcome(metered: tuple[Bot, FakeClock]) -> None:
    bot, clock = metered
    approved = await start(bot)
    clock.advance(timedelta(seconds=90))
    await decide(bot, approved, "Approve", "CHG-1")
    rejected = await start(bot, "@restarter restart payments")
    clock.advance(timedelta(minutes=20))
    await decide(bot, rejected, "Reject", "not during the freeze")
    await start(bot)
    clock.advance(timedelta(hours=25))
    await bot.service.sweep()
    await bot.settle()
    samples = await scrape(bot)

    name = "approvals_time_to_decision_seconds"
    deploy, restart = {"tool": "deploy_release"}, {"tool": "restart_service"}
    assert value(samples, f"{name}_count", **deploy, outcome="approved") == 1
    assert value(samples, f"{name}_sum", **deploy, outcome="approved") == 90.0
    assert value(samples, f"{name}_bucket", **deploy, outcome="approved", le="60.0") == 0
    assert value(samples, f"{name}_bucket", **deploy, outcome="approved", le="300.0") == 1
    assert value(samples, f"{name}_sum", **restart, outcome="rejected") == 1200.0
    assert value(samples, f"{name}_count", **restart, outcome="approved") == 0
    # the expired call waited its whole lifetime (24 h by default), not until the sweep
    assert value(samples, f"{name}_sum", **deploy, outcome="expired") == 86400.0
    labelled = {
        dict(labels)["tool"]
        for (sample, labels) in samples
        if sample.startswith(name) and "tool" in dict(labels)
    }
    assert labelled == {"deploy_release", "restart_service"}


async def test_a_crash_after_the_effect_reuses_the_result_without_running_again(
    metered: tuple[Bot, FakeClock],
) -> None:
    bot, _ = metered
    card = await start(bot)
    run = (await bot.store.list_runs(limit=1))[0]
    paused = (await bot.service.load_state(run.run_id)).to_json()
    await decide(bot, card, "Approve", "CHG-2")
    # As if the process died after the ledger recorded the result and before the
    # finished state was saved: the paused state is back and the run left resuming.
    done = await bot.store.get_run(run.run_id)
    assert done is not None
    await bot.store.save_run_state(
        run.run_id,
        expected_version=done.version,
        state_json=paused,
        status="resuming",
        schema_version=CURRENT_SCHEMA_VERSION,
    )
    assert await bot.service.recover() == 1
    await bot.settle()

    samples = await scrape(bot)
    assert len(bot.effects.deploys) == 1
    assert value(samples, "idempotency_reuse_total") == 1
    assert value(samples, "tool_executions_total", outcome="claimed") == 1
    assert value(samples, "resume_attempts_total") == 2  # the decision's, the recovery's
    assert value(samples, "runs_total", event="completed") == 2


async def test_changed_arguments_and_an_unreadable_state_are_counted(
    metered: tuple[Bot, FakeClock],
) -> None:
    bot, _ = metered
    card = await start(bot)
    run = (await bot.store.list_runs(limit=1))[0]
    tampered = json.loads((await bot.service.load_state(run.run_id)).to_json())
    tampered["history"][-1]["tool_calls"][0]["arguments"]["version"] = "6.6.6"
    tampered["pending_calls"][0]["arguments"]["version"] = "6.6.6"
    await overwrite_state(bot, run.run_id, json.dumps(tampered))
    await decide(bot, card, "Approve", "looked fine")

    samples = await scrape(bot)
    assert bot.effects.deploys == []
    assert value(samples, "argument_digest_mismatch_total") == 1
    assert value(samples, "approval_decisions_total", outcome="revoked") == 1
    assert value(samples, "approval_requested_total") == 2  # asked again

    again = card_calls(bot.fake)[-1]
    await overwrite_state(bot, run.run_id, '{"$schemaVersion": "99.0"}')
    await decide(bot, again, "Approve", "second look")
    samples = await scrape(bot)
    assert value(samples, "state_deserialize_failure_total", reason="schema_version") == 1
    # a state of a newer schema waits for the build that reads it, paused, not failed
    assert value(samples, "runs_total", event="failed") == 0
    waiting = await bot.store.get_run(run.run_id)
    assert waiting is not None
    assert waiting.status == "paused"
    assert "99.0" in str(waiting.needs_migration)


async def overwrite_state(bot: Bot, run_id: str, state_json: str) -> None:
    """Someone able to write the store replaces the run's state."""
    current = await bot.store.get_run(run_id)
    assert current is not None
    await bot.store.save_run_state(
        run_id,
        expected_version=current.version,
        state_json=state_json,
        status=current.status,
        schema_version=CURRENT_SCHEMA_VERSION,
    )


async def test_a_call_cut_off_by_a_crash_is_counted_uncertain(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    database = tmp_path / "approvals.db"
    bot, runner, session = await start_bot(fake_slack, database, keyring, metrics=Metrics())
    try:
        bot.effects.hang = True  # the restart applies, then the process "dies"
        card = await start(bot, "@restarter restart payments")
        view = await open_modal(bot, card, "Approve", user=APPROVER)
        await bot.driver.submit(view, user=APPROVER, reason="CHG-3")
        await bot.effects.applied.wait()
    finally:
        await stop_bot(bot, runner, session, drain_seconds=0)

    after, runner, session = await start_bot(fake_slack, database, keyring, metrics=Metrics())
    try:
        assert await after.service.recover() == 1
        await after.settle()
        samples = await scrape(after)
    finally:
        await stop_bot(after, runner, session)
    assert value(samples, "effect_uncertain_total") == 1
    assert value(samples, "resume_attempts_total") == 1
    assert value(samples, "tool_executions_total", outcome="claimed") == 0
