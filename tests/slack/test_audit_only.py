"""End to end: audit-only tools (`mode = "audit"`) through the real server, Bolt app and
slack_sdk against the fake Slack. The call runs without anyone being asked, and its card
appears in the run's thread after it ran, with its result: redacted, escaped and with
hiding characters made visible like every card, without buttons; the audit log has the
policy's approval and the execution. Other tools of the same policy still wait."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.policy.loading import parse_policy
from bot.runtime import Agent, AgentRegistry, ScriptedModel
from bot.service.audited import AUDIT_VOTER
from store.crypto import KeyRing
from tests.slack.fake_slack import Call, FakeSlack
from tests.slack.slack_harness import (
    CHANNEL,
    HOSTILE_TEXT,
    REQUESTER,
    TOOL_ARGUMENT_SECRET,
    TOOL_RESULT_SECRET,
    Bot,
    Effects,
    build_registry,
    buttons_of,
    card_calls,
    in_thread,
    start_bot,
    start_run,
    stop_bot,
)

POLICY = """
[tools.restart_service]
mode = "audit"

[tools.rotate_token]
mode = "audit"

[tools.echo]
mode = "audit"
"""
BIDI = "invoice\u202egnp.exe"


def agents(effects: Effects) -> tuple[AgentRegistry, dict[str, ScriptedModel]]:
    """The harness's agents and one that echoes a text hiding a right-to-left override."""
    registry, models = build_registry(effects)
    echoer = registry.latest("echo")
    assert isinstance(echoer, Agent)
    echo = echoer.tool_named("echo")
    assert echo is not None
    model = ScriptedModel([[("echo", {"text": BIDI})], "Echoed."])
    registry.register(Agent(name="bidi", instructions="Echo.", tools=[echo], model=model))
    return registry, {**models, "bidi": model}


@asynccontextmanager
async def audited(fake: FakeSlack, tmp_path: Path, keyring: KeyRing) -> AsyncIterator[Bot]:
    bot, runner, session = await start_bot(
        fake, tmp_path / "approvals.db", keyring, agents=agents,
        policy=parse_policy(POLICY, source="audit.toml"),
    )  # fmt: skip
    try:
        yield bot
    finally:
        await stop_bot(bot, runner, session)


async def run_audited(bot: Bot, task: str, answer: str) -> tuple[Call, Call]:
    """/agent <task>: the root message, and the audit card posted once the call ran."""
    reply = await bot.driver.command("/agent", task, user=REQUESTER, channel=CHANNEL)
    assert (reply.status, reply.text) == (200, "")
    (root,) = await bot.fake.wait_for("chat.postMessage", lambda c: "thread_ts" not in c.args)
    (card,) = await bot.fake.wait_for("chat.postMessage", in_thread(root, "Audit only"))
    await bot.fake.wait_for("chat.postMessage", in_thread(root, answer))
    await bot.settle()
    return root, card


async def test_an_audit_only_tool_never_waits_and_its_card_shows_the_result(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    async with audited(fake_slack, tmp_path, keyring) as bot:
        root, card = await run_audited(bot, "@restarter restart", "Restarted.")
        assert [r[0] for r in bot.effects.restarts] == ["payments"]  # ran, nobody clicked
        assert card_calls(bot.fake) == []  # no card ever waited with buttons
        assert buttons_of(card) == []
        assert "*Result:* restarted payments" in card.text
        assert "`restart_service` ran without waiting" in card.text
        assert '"service": "payments"' in card.text or "payments" in card.text
        thread = [c for c in bot.fake.calls_to("chat.postMessage")
                  if c.args.get("thread_ts") == root.answer["ts"]]  # fmt: skip
        assert thread.index(card) < len(thread) - 1  # before the final answer, after the run
        assert bot.fake.calls_to("views.open") == []
        (approval,) = await bot.store.list_approvals()
        assert (approval.status, approval.decider) == ("approved", AUDIT_VOTER)
        assert (approval.slack_channel, approval.slack_ts) == (CHANNEL, card.answer["ts"])
        kinds = [(e.kind, e.detail.get("via")) for e in await bot.store.audit_events()
                 if e.approval_id == approval.approval_id]  # fmt: skip
        assert ("decided", "audit") in kinds
        assert any(kind == "executed" for kind, _ in kinds)


async def test_the_audit_card_is_redacted_escaped_and_shows_hiding_characters(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    async with audited(fake_slack, tmp_path, keyring) as bot:
        _, leaky = await run_audited(bot, "@leaky rotate", "Done")
        shown = json.dumps(leaky.args)
        assert TOOL_ARGUMENT_SECRET not in shown
        assert TOOL_RESULT_SECRET not in shown
        assert "rotated payments" in leaky.text

    fake_slack.calls.clear()
    (tmp_path / "2").mkdir()
    async with audited(fake_slack, tmp_path / "2", keyring) as bot:
        _, hostile = await run_audited(bot, "@echo say", "Echoed.")
        assert "<!channel>" not in json.dumps(hostile.args)
        assert HOSTILE_TEXT[:10] not in hostile.text

    fake_slack.calls.clear()
    (tmp_path / "3").mkdir()
    async with audited(fake_slack, tmp_path / "3", keyring) as bot:
        _, bidi = await run_audited(bot, "@bidi say", "Echoed.")
        assert "\u202e" not in json.dumps(bidi.args, ensure_ascii=False)
        texts = [block["text"]["text"] for block in bidi.args["blocks"] if "text" in block]
        assert any("*Result:* invoice\\u202egnp.exe" in text for text in texts)


async def test_a_tool_that_is_not_audit_only_still_waits(
    fake_slack: FakeSlack, tmp_path: Path, keyring: KeyRing
) -> None:
    async with audited(fake_slack, tmp_path, keyring) as bot:
        _, (card,) = await start_run(bot, "deploy payments 1.2.3")
        await bot.settle()
        assert buttons_of(card)[:1] == ["Approve"]
        assert bot.effects.deploys == []
