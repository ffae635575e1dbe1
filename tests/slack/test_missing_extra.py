"""`/agent @ops-langgraph …` (or another built-in framework agent) on a bot without that
framework's extra: the requester is told which extra to install, as the CLI does, not
only that no such agent is registered; nothing is started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.adapters.lazy import BuiltinAgent, builtin_agents
from bot.agents import builtin_registry
from bot.runtime import AgentRegistry, ScriptedModel
from store.crypto import KeyRing
from tests.slack.fake_slack import RESPONSE_URL, FakeSlack
from tests.slack.slack_harness import CHANNEL, REQUESTER, Effects, start_bot, stop_bot


@pytest.mark.parametrize("builtin", builtin_agents(), ids=lambda agent: agent.name)
async def test_a_builtin_agent_without_its_extra_names_the_extra(
    builtin: BuiltinAgent,
    fake_slack: FakeSlack,
    tmp_path: Path,
    keyring: KeyRing,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, builtin.requires, None)  # as if the extra were absent

    def agents(effects: Effects) -> tuple[AgentRegistry, dict[str, ScriptedModel]]:
        return builtin_registry(), {}

    bot, runner, session = await start_bot(fake_slack, tmp_path / "a.db", keyring, agents=agents)
    try:
        text = f"@{builtin.name} deploy payments 1.2.3"
        await bot.driver.command("/agent", text, user=REQUESTER, channel=CHANNEL)
        (told,) = await bot.fake.wait_for(RESPONSE_URL)
        await bot.settle()
        assert told.args["response_type"] == "ephemeral"
        assert told.args["text"] == (
            f":warning: the agent '{builtin.name}' needs {builtin.framework}, which is not "
            f"installed: pip install -e '.[{builtin.extra}]' in your approvals-bot checkout"
        )
        assert bot.fake.calls_to("chat.postMessage") == []
        assert await bot.service.store.list_runs() == []
    finally:
        await stop_bot(bot, runner, session)
