"""ops-langgraph and ops-pydantic in Slack, end to end, as ops-openai is
(tests/adapters/test_slack.py): `/agent @ops-langgraph ...`, the card, the decision
modal, the answer and a follow-up in the thread, a rejection's message, `/approvals
list`; and, since both frameworks take changed arguments, Approve with changes from
the card. The real Bolt app, store, service and frameworks; fakes only at Slack."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agents import builtin_registry
from bot.demo import EffectsFile, ops_dependencies
from bot.runtime import AgentRegistry
from bot.runtime import ScriptedModel as CoreScriptedModel
from store.crypto import KeyRing
from tests.adapters.frameworks.support import AGENTS
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (  # noqa: F401 (fixtures)
    APPROVER,
    CHANNEL,
    REQUESTER,
    Bot,
    Effects,
    buttons_of,
    card_calls,
    fake_slack,
    in_thread,
    keyring,
    open_modal,
    start_bot,
    stop_bot,
    thread_message,
)

pytestmark = pytest.mark.parametrize("agent", AGENTS)


def builtin_agents(_: Effects) -> tuple[AgentRegistry, dict[str, CoreScriptedModel]]:
    return builtin_registry(), {}


@pytest.fixture
async def bot(
    fake_slack: FakeSlack,  # noqa: F811 (the fixture)
    tmp_path: Path,
    keyring: KeyRing,  # noqa: F811 (the fixture)
    effects_path: Path,
) -> AsyncIterator[Bot]:
    started, runner, session = await start_bot(
        fake_slack,
        tmp_path / "approvals.db",
        keyring,
        agents=builtin_agents,
        dependencies=ops_dependencies(),
    )
    try:
        yield started
    finally:
        await stop_bot(started, runner, session)


async def agent_command(bot: Bot, text: str, *, cards: int = 1) -> tuple[Call, list[Call]]:
    reply = await bot.driver.command("/agent", text, user=REQUESTER, channel=CHANNEL)
    assert (reply.status, reply.text) == (200, "")
    (root,) = await bot.fake.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
    found = await bot.fake.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == root.answer["ts"] and c in card_calls(bot.fake),
        count=cards,
    )
    return root, found


async def test_agent_from_slack_pauses_and_runs_once_approved(
    bot: Bot, effects_path: Path, agent: str
) -> None:
    root, (card,) = await agent_command(bot, f"@{agent} deploy payments 1.2.3")

    assert agent in root.text
    assert buttons_of(card) == ["Approve", "Approve with changes", "Reject", "Revoke"]
    assert "deploy_release" in card.text
    assert await EffectsFile(effects_path).lines() == []  # nothing ran before the decision
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    reply = await bot.driver.submit(view, user=APPROVER, reason="CHG-9")
    assert (reply.status, reply.text) == (200, "")

    await bot.fake.wait_for("chat.postMessage", in_thread(root, "deployed payments 1.2.3"))
    await bot.settle()
    [line] = await EffectsFile(effects_path).lines()
    run = await bot.service.store.find_run_by_thread(CHANNEL, root.answer["ts"])
    assert run is not None
    assert (run.status, run.agent_name) == ("completed", agent)
    [approval] = await bot.service.store.list_approvals(run_id=run.run_id)
    assert line["arguments_digest"] == approval.arguments_digest
    assert approval.arguments_digest in card.text  # the digest the card showed

    # a thread reply continues the framework's conversation
    await bot.driver.event(
        thread_message(root, "deploy payments 1.2.4", user=REQUESTER, ts="1700000100.000100")
    )
    await bot.fake.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == root.answer["ts"] and c in card_calls(bot.fake),
        count=2,
    )


async def test_a_rejection_message_reaches_the_agent(
    bot: Bot, effects_path: Path, agent: str
) -> None:
    root, (card,) = await agent_command(bot, f"@{agent} restart payments")
    view = await open_modal(bot, card, "Reject", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason="freeze", message="Not this week.")

    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Not this week."))
    await bot.settle()
    assert await EffectsFile(effects_path).lines() == []


async def test_approvals_list_shows_a_runs_call(bot: Bot, agent: str) -> None:
    _, (card,) = await agent_command(bot, f"@{agent} set payments mode=fast")
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    await bot.settle()

    reply = await bot.driver.command("/approvals", "list", user=APPROVER, channel=CHANNEL)

    assert reply.status == 200
    (listed,) = await bot.fake.wait_for("response_url", lambda c: approval_id in c.text)
    assert "set_config" in listed.text


async def test_approve_with_changes_from_the_card_runs_the_changed_call(
    bot: Bot, effects_path: Path, agent: str
) -> None:
    root, (card,) = await agent_command(bot, f"@{agent} deploy payments 1.2.3")
    view = await open_modal(bot, card, "Approve with changes", user=APPROVER)
    changed = {"service": "payments", "version": "1.2.4"}

    reply = await bot.driver.submit(
        view, user=APPROVER, reason="hotfix is 1.2.4", message=json.dumps(changed)
    )

    assert (reply.status, reply.text) == (200, "")
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "deployed payments 1.2.4"))
    await bot.settle()
    [line] = await EffectsFile(effects_path).lines()
    assert line["arguments"] == changed
    run = await bot.service.store.find_run_by_thread(CHANNEL, root.answer["ts"])
    assert run is not None
    [approval] = await bot.service.store.list_approvals(run_id=run.run_id)
    assert (approval.amended_by, approval.arguments_digest) == (APPROVER, line["arguments_digest"])
