"""A model server that keeps failing: the OpenAI-compatible model tries again within its
bound, each retry counted, then the run fails with one clear line in its thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.metrics import Metrics
from bot.runtime import Agent, AgentRegistry, ScriptedModel
from bot.runtime.openai_model import ModelRetry, OpenAIChatModel
from store.crypto import KeyRing
from tests.models.fake_llm import FakeLLM, Reply
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import CHANNEL, REQUESTER, Effects, start_bot, stop_bot
from tests.slack.test_metrics import scrape, value

FAST = ModelRetry(attempts=3, first_delay=0.001, max_delay=1.0)


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    server = FakeLLM()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_a_failing_model_is_retried_then_told_in_the_thread(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing, llm: FakeLLM
) -> None:
    metrics = Metrics()
    model = OpenAIChatModel(
        base_url=llm.base_url,
        api_key="sk-test",
        model="m",
        retry=FAST,
        on_retry=lambda reason: metrics.model_retries.labels(reason=reason).inc(),
    )

    def agents(effects: Effects) -> tuple[AgentRegistry, dict[str, ScriptedModel]]:
        agent = Agent(name="ops", instructions="-", tools=[], model=model)
        return AgentRegistry([agent]), {}

    llm.replies += [Reply(status=503, body="overloaded")] * 3
    bot, runner, session = await start_bot(
        fake_slack, tmp_path / "approvals.db", keyring, agents=agents, metrics=metrics
    )
    try:
        await bot.driver.command("/agent", "status payments", user=REQUESTER, channel=CHANNEL)
        (failed,) = await bot.fake.wait_for(
            "chat.postMessage", lambda call: "answered HTTP 503" in call.text
        )
        await bot.settle()
        samples = await scrape(bot)
    finally:
        await stop_bot(bot, runner, session)
        await model.aclose()
    assert "after 3 tries: overloaded" in failed.text
    assert "thread_ts" in failed.args
    assert len(llm.requests) == 3
    assert value(samples, "model_retries_total", reason="503") == 2
    assert value(samples, "runs_total", event="failed") == 1
