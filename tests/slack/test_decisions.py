"""Deciding from Slack: card -> modal -> decision -> resume -> answer in the thread, and
the decisions that must change nothing."""

from __future__ import annotations

import asyncio
import json

from bot.canonical import legacy_arguments_digest
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    HOSTILE_TEXT,
    OTHER_APPROVER,
    REQUESTER,
    SECRET_VALUE,
    Bot,
    buttons_of,
    card_calls,
    in_thread,
    labels,
    open_modal,
    start_run,
)
from tests.states import own_state


async def test_approve_from_the_card_resumes_and_answers_in_the_thread(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    assert root.args["channel"] == CHANNEL
    assert f"<@{REQUESTER}>" in root.text
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    buttons = [e["text"]["text"] for e in card.args["blocks"][-1]["elements"]]
    assert buttons == ["Approve", "Approve with changes", "Reject", "Revoke"]
    assert {e["value"] for e in card.args["blocks"][-1]["elements"]} == {approval_id}
    digest = await card_digest(bot, approval_id)
    assert digest in card.text
    assert "deploy_release" in card.text
    assert "payments" in card.text

    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert labels(view) == ["Reason"]
    assert digest in json.dumps(view["blocks"])
    reply = await bot.driver.submit(view, user=APPROVER, reason="change ticket CHG-1 <ok>")
    assert (reply.status, reply.text) == (200, "")

    (update,) = await bot.fake.wait_for("chat.update")
    assert update.args["ts"] == card.answer["ts"]
    assert buttons_of(update) == ["Revoke"]  # until it runs
    assert f"<@{APPROVER}>" in update.text
    assert "change ticket CHG-1 &lt;ok&gt;" in update.text
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert len(bot.effects.deploys) == 1

    run = await bot.service.store.find_run_by_thread(CHANNEL, root.answer["ts"])
    assert run is not None
    assert run.status == "completed"
    state = await own_state(bot.service, run.run_id)
    (metadata,) = state.approval_metadata.values()
    assert (metadata.approver_id, metadata.reason) == (APPROVER, "change ticket CHG-1 <ok>")
    decided = await bot.service.store.audit_events(approval_id=approval_id)
    assert [(e.kind, e.actor) for e in decided if e.kind == "decided"] == [("decided", APPROVER)]


async def test_reject_with_a_message_to_the_agent(bot: Bot) -> None:
    root, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Reject", user=APPROVER)
    assert labels(view) == ["Reason", "Message to the agent"]
    await bot.driver.submit(
        view, user=APPROVER, reason="freeze week", message="Not during the freeze."
    )
    (update,) = await bot.fake.wait_for("chat.update")
    assert "Rejected" in update.text
    assert "freeze week" in update.text
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await bot.settle()
    assert bot.effects.deploys == []
    seen_by_model = json.dumps(bot.models["ops"].requests[-1].history)
    assert "Not during the freeze." in seen_by_model
    assert "freeze week" not in seen_by_model  # the reason is audit only


async def test_two_pending_calls_are_decided_separately(bot: Bot) -> None:
    root, cards = await start_run(bot, "@twin deploy both", cards=2)
    first, second = cards
    view = await open_modal(bot, first, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason="payments is fine")
    await bot.fake.wait_for("chat.update", lambda c: c.args["ts"] == first.answer["ts"])
    await bot.settle()
    assert bot.effects.deploys == []  # nothing runs before every call of the turn is decided

    view = await open_modal(bot, second, "Reject", user=OTHER_APPROVER)
    await bot.driver.submit(view, user=OTHER_APPROVER, reason="ledger is frozen")
    await bot.fake.wait_for("chat.update", lambda c: c.args["ts"] == second.answer["ts"])
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Both calls are settled."))
    await bot.settle()
    assert [(service, version) for service, version, _ in bot.effects.deploys] == [
        ("payments", "1.2.3")
    ]


async def test_double_submission_and_racing_approvers_decide_once(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view_a = await open_modal(bot, card, "Approve", user=APPROVER)
    view_b = await open_modal(bot, card, "Reject", user=OTHER_APPROVER)
    replies = await asyncio.gather(
        bot.driver.submit(view_a, user=APPROVER, reason="go"),
        bot.driver.submit(view_a, user=APPROVER, reason="go"),  # double click on Submit
        bot.driver.submit(view_b, user=OTHER_APPROVER, reason="stop"),
    )
    assert [reply.status for reply in replies] == [200, 200, 200]
    await bot.settle()
    approval_id = view_a["private_metadata"].split("|")[1]
    events = await bot.service.store.audit_events(approval_id=approval_id)
    decided = [event for event in events if event.kind == "decided"]
    assert len(decided) == 1
    winner = decided[0].actor
    told = await bot.fake.wait_for("chat.postEphemeral", count=2)
    assert all("already" in call.text and f"<@{winner}>" in call.text for call in told)
    assert len(bot.fake.calls_to("chat.update")) == 1
    assert len(bot.effects.deploys) == (1 if winner == APPROVER else 0)


async def test_the_requester_may_not_approve_their_own_call(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    reply = await bot.driver.click(card, "Approve", user=REQUESTER, ts=card.answer["ts"])
    assert (reply.status, reply.text) == (200, "")
    (told,) = await bot.fake.wait_for("chat.postEphemeral")
    assert told.args["user"] == REQUESTER
    assert "someone else" in told.text
    await bot.settle()
    assert bot.fake.calls_to("views.open") == []  # no form that could not succeed
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    assert record.status == "pending"
    assert bot.fake.calls_to("chat.update") == []
    assert bot.effects.deploys == []


async def test_a_missing_reason_is_an_inline_error(bot: Bot) -> None:
    _, (card,) = await start_run(bot)
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    reply = await bot.driver.submit(view, user=APPROVER, reason="   ")
    assert reply.status == 200
    assert reply.json()["response_action"] == "errors"
    assert set(reply.json()["errors"]) == {"reason"}
    await bot.settle()
    assert bot.fake.calls_to("chat.update") == []


async def test_a_secret_argument_is_redacted_on_the_card_but_covered_by_the_digest(
    bot: Bot,
) -> None:
    _, (card,) = await start_run(bot, "@secrets rotate the token")
    assert SECRET_VALUE not in card.text
    assert "redacted" in card.text
    real = {"service": "payments", "key": "slack_token", "value": SECRET_VALUE}
    approval_id = card.args["blocks"][-1]["elements"][0]["value"]
    assert await card_digest(bot, approval_id) in card.text
    assert legacy_arguments_digest(real) not in card.text  # keyed: no oracle for guesses
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    assert SECRET_VALUE not in record.snapshot
    view = await open_modal(bot, card, "Approve", user=APPROVER)
    assert SECRET_VALUE not in json.dumps(view)
    await bot.driver.submit(view, user=APPROVER, reason="rotation")
    (update,) = await bot.fake.wait_for("chat.update")
    assert SECRET_VALUE not in update.text
    await bot.settle()
    assert bot.effects.configs == [("slack_token", SECRET_VALUE)]


async def test_long_and_hostile_arguments_fit_the_card_escaped(bot: Bot) -> None:
    # The scripted model echoes all of HOSTILE_TEXT; the task carries its hostile head
    # (all of it would be refused as too long: limits.task_chars).
    reply = await bot.driver.command(
        "/agent", f"@echo {HOSTILE_TEXT[:200]}", user=REQUESTER, channel=CHANNEL
    )
    assert reply.status == 200
    (card,) = await bot.fake.wait_for("chat.postMessage", lambda c: c in card_calls(bot.fake))
    for block in card.args["blocks"]:
        text = block.get("text", {}).get("text", "")
        assert len(text) <= 3000
        for element in block.get("elements", []):
            assert (
                len(element.get("text", "") if isinstance(element.get("text"), str) else "") <= 2000
            )
    call_block = next(b for b in card.args["blocks"] if b.get("block_id") == "call")
    assert "&lt;!channel&gt; &amp; &lt;@U0BOSS&gt;" in call_block["text"]["text"]
    assert "<!channel>" not in card.text
    assert "truncated" in call_block["text"]["text"] or "…" in call_block["text"]["text"]
    (root,) = [c for c in bot.fake.calls_to("chat.postMessage") if "thread_ts" not in c.args]
    assert "<!channel>" not in root.text


async def card_digest(bot: Bot, approval_id: str) -> str:
    """The digest a card must show: its call's keyed digest, from the run's own state."""
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    state = await own_state(bot.service, record.run_id)
    digest = state.call_digest(record.tool_call_id)
    assert digest == record.arguments_digest
    return digest
