"""ops-openai in Slack, end to end: `/agent @ops-openai ...`, the card (no Approve with
changes for SDK runs), the decision modal, the answer and a follow-up in the thread,
`/approvals list`; the real Bolt app, store, service and SDK, fakes only at Slack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agents import builtin_registry
from bot.demo import EffectsFile, ops_dependencies
from bot.runtime import AgentRegistry
from bot.runtime import ScriptedModel as CoreScriptedModel
from store.crypto import KeyRing
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


def sdk_agents(_: Effects) -> tuple[AgentRegistry, dict[str, CoreScriptedModel]]:
    return builtin_registry(), {}


@pytest.fixture
async def sdk_bot(
    fake_slack: FakeSlack,  # noqa: F811 (the fixture)
    tmp_path: Path,
    keyring: KeyRing,  # noqa: F811 (the fixture)
    effects_path: Path,
) -> AsyncIterator[Bot]:
    started, runner, session = await start_bot(
        fake_slack,
        tmp_path / "approvals.db",
        keyring,
        agents=sdk_agents,
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


async def test_agent_ops_openai_from_slack_pauses_and_runs_once_approved(
    sdk_bot: Bot, effects_path: Path
) -> None:
    root, (card,) = await agent_command(sdk_bot, "@ops-openai deploy payments 1.2.3")

    assert "ops-openai" in root.text
    assert buttons_of(card) == ["Approve", "Reject", "Revoke"]  # no Approve with changes
    assert "cannot be approved with changes" in str(card.args["blocks"])
    assert "deploy_release" in card.text
    view = await open_modal(sdk_bot, card, "Approve", user=APPROVER)
    reply = await sdk_bot.driver.submit(view, user=APPROVER, reason="CHG-9")
    assert (reply.status, reply.text) == (200, "")

    await sdk_bot.fake.wait_for("chat.postMessage", in_thread(root, "deployed payments 1.2.3"))
    await sdk_bot.settle()
    [line] = await EffectsFile(effects_path).lines()
    run = await sdk_bot.service.store.find_run_by_thread(CHANNEL, root.answer["ts"])
    assert run is not None
    assert (run.status, run.agent_name) == ("completed", "ops-openai")
    [approval] = await sdk_bot.service.store.list_approvals(run_id=run.run_id)
    assert line["arguments_digest"] == approval.arguments_digest
    assert approval.arguments_digest in card.text  # the digest the card showed

    # a thread reply continues the SDK conversation
    await sdk_bot.driver.event(
        thread_message(root, "deploy payments 1.2.4", user=REQUESTER, ts="1700000100.000100")
    )
    await sdk_bot.fake.wait_for(
        "chat.postMessage",
        lambda c: c.args.get("thread_ts") == root.answer["ts"] and c in card_calls(sdk_bot.fake),
        count=2,
    )


async def test_a_rejection_message_reaches_the_sdk_agent(sdk_bot: Bot, effects_path: Path) -> None:
    root, (card,) = await agent_command(sdk_bot, "@ops-openai restart payments")
    view = await open_modal(sdk_bot, card, "Reject", user=APPROVER)
    await sdk_bot.driver.submit(view, user=APPROVER, reason="freeze", message="Not this week.")

    await sdk_bot.fake.wait_for("chat.postMessage", in_thread(root, "Not this week."))
    await sdk_bot.settle()
    assert await EffectsFile(effects_path).lines() == []


async def test_approvals_list_shows_an_sdk_runs_call(sdk_bot: Bot) -> None:
    _, (card,) = await agent_command(sdk_bot, "@ops-openai set payments mode=fast")
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    await sdk_bot.settle()

    reply = await sdk_bot.driver.command("/approvals", "list", user=APPROVER, channel=CHANNEL)

    assert reply.status == 200
    (listed,) = await sdk_bot.fake.wait_for("response_url", lambda c: approval_id in c.text)
    assert "set_config" in listed.text


async def test_app_home_offers_approve_with_changes_only_where_the_card_does(
    sdk_bot: Bot,
) -> None:
    _, (card,) = await agent_command(sdk_bot, "@ops-openai deploy payments 1.2.3")
    await sdk_bot.settle()
    await sdk_bot.driver.event({"type": "app_home_opened", "user": APPROVER, "tab": "home"})
    (published,) = await sdk_bot.fake.wait_for("views.publish")
    (actions,) = [b for b in published.args["view"]["blocks"] if b["type"] == "actions"]
    labels = [element["text"]["text"] for element in actions["elements"]]
    assert labels == buttons_of(card) == ["Approve", "Reject", "Revoke"]
