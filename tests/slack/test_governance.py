"""Governance from Slack: who may decide, quorum, expiry, revocation, edited arguments
and authorization re-checked right before the tool runs. Real store, service, Bolt app
and slack_sdk; the fake Slack answers usergroups.users.list from `fake.usergroups`."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from bot.credentials import REDACTED
from tests.slack.fake_slack import RESPONSE_URL
from tests.slack.governance_harness import (
    ADMIN,
    OUTSIDER,
    RELEASE_GROUP,
    approval_id_of,
    card_update,
    clock,
    governed,
    told,
    vote,
)
from tests.slack.slack_harness import (
    APPROVER,
    CHANNEL,
    OTHER_APPROVER,
    REQUESTER,
    Bot,
    FakeClock,
    buttons_of,
    in_thread,
    open_modal,
    start_run,
)

__all__ = ["clock", "governed"]


async def test_self_approval_and_non_members_are_refused_privately(governed: Bot) -> None:
    _, (card,) = await start_run(governed)
    for user in (REQUESTER, OUTSIDER):
        await governed.driver.click(card, "Approve", user=user, ts=card.answer["ts"])
    await governed.fake.wait_for("chat.postEphemeral", told(REQUESTER, "someone else"))
    (refused,) = await governed.fake.wait_for(
        "chat.postEphemeral", told(OUTSIDER, "not an approver")
    )
    assert RELEASE_GROUP in refused.text
    await governed.settle()
    assert governed.fake.calls_to("views.open") == []
    assert governed.fake.calls_to("chat.update") == []
    record = await governed.service.store.get_approval(approval_id_of(card))
    assert record is not None
    assert record.status == "pending"


async def test_quorum_of_two_counts_each_person_once(governed: Bot) -> None:
    root, (card,) = await start_run(governed)
    assert "0 of 2 approvals" in card.text
    await vote(governed, card, APPROVER)
    (counted,) = await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    assert f"approved by <@{APPROVER}>" in counted.text
    assert buttons_of(counted) == ["Approve", "Approve with changes", "Reject", "Revoke"]
    await governed.fake.wait_for("chat.postEphemeral", told(APPROVER, "Your approval counts"))
    await governed.settle()
    assert governed.effects.deploys == []

    await governed.driver.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    await governed.fake.wait_for("chat.postEphemeral", told(APPROVER, "already"))
    await governed.settle()
    assert len(governed.fake.calls_to("views.open")) == 1  # no second form for them

    await vote(governed, card, OTHER_APPROVER, reason="second pair of eyes")
    (approved,) = await governed.fake.wait_for("chat.update", card_update(card, "Approved"))
    assert f"<@{OTHER_APPROVER}>" in approved.text
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await governed.settle()
    assert len(governed.effects.deploys) == 1
    events = await governed.service.approval_trail(approval_id_of(card), viewer=APPROVER)
    assert [(e.kind, e.actor) for e in events if e.kind in ("voted", "decided")] == [
        ("voted", APPROVER),
        ("decided", OTHER_APPROVER),
    ]


async def test_expiry_racing_a_click_refuses_the_decision(governed: Bot, clock: FakeClock) -> None:
    root, (card,) = await start_run(governed)
    view = await open_modal(governed, card, "Approve", user=APPROVER)
    clock.advance(timedelta(hours=1, seconds=1))
    await governed.driver.submit(view, user=APPROVER, reason="just in time?")
    (refused,) = await governed.fake.wait_for("chat.postEphemeral", told(APPROVER, "expired"))
    assert "Nothing changed" in refused.text
    (expired,) = await governed.fake.wait_for("chat.update", card_update(card, "Expired"))
    assert buttons_of(expired) == []
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "nobody decided"))
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await governed.settle()
    assert governed.effects.deploys == []
    seen = json.dumps(governed.models["ops"].requests[-1].history)
    assert "expired" in seen


async def test_revoke_from_the_card_by_the_requester(governed: Bot) -> None:
    root, (card,) = await start_run(governed)
    view = await open_modal(governed, card, "Revoke", user=REQUESTER)
    assert view["submit"]["text"] == "Revoke"
    await governed.driver.submit(view, user=REQUESTER, reason="wrong service")
    (revoked,) = await governed.fake.wait_for("chat.update", card_update(card, "Revoked"))
    assert f"Revoked by <@{REQUESTER}>" in revoked.text
    assert "wrong service" in revoked.text
    assert buttons_of(revoked) == []
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "Deployed payments 1.2.3."))
    await governed.settle()
    assert governed.effects.deploys == []


async def test_revoke_with_the_command_needs_the_right_to(governed: Bot) -> None:
    _, (card,) = await start_run(governed)
    approval_id = approval_id_of(card)
    await governed.driver.command(
        "/approvals", f"revoke {approval_id} not mine", user=OUTSIDER, channel=CHANNEL
    )
    (refused,) = await governed.fake.wait_for(RESPONSE_URL)
    assert ":no_entry:" in refused.text
    await governed.settle()
    record = await governed.service.store.get_approval(approval_id)
    assert record is not None
    assert record.status == "pending"

    await governed.driver.command(
        "/approvals", f"revoke {approval_id} change freeze", user=ADMIN, channel=CHANNEL
    )
    answers = await governed.fake.wait_for(RESPONSE_URL, count=2)
    assert "Revoked" in answers[1].text
    (revoked,) = await governed.fake.wait_for("chat.update", card_update(card, "Revoked"))
    assert f"<@{ADMIN}>" in revoked.text
    assert "change freeze" in revoked.text
    await governed.settle()
    assert governed.effects.deploys == []
    trail = await governed.service.approval_trail(approval_id, viewer=ADMIN)
    assert any(e.kind == "revoked" and e.actor == ADMIN for e in trail)


async def test_approve_with_changes(governed: Bot) -> None:
    root, (card,) = await start_run(governed)
    view = await open_modal(governed, card, "Approve with changes", user=APPROVER)
    arguments_block = next(b for b in view["blocks"] if b.get("block_id") == "arguments")
    shown = json.loads(arguments_block["element"]["initial_value"])
    assert shown == {"service": "payments", "version": "1.2.3"}

    bad_json = await governed.driver.submit(view, user=APPROVER, reason="r", message="{nope")
    assert bad_json.json()["response_action"] == "errors"
    assert "Not valid JSON" in bad_json.json()["errors"]["arguments"]
    wrong_type = await governed.driver.submit(
        view, user=APPROVER, reason="r", message='{"service": "payments", "version": 7}'
    )
    assert wrong_type.json()["response_action"] == "errors"
    assert "version" in wrong_type.json()["errors"]["arguments"]
    await governed.settle()
    assert governed.fake.calls_to("chat.update") == []

    changed = {"service": "payments", "version": "1.2.4"}
    old = await governed.service.store.get_approval(approval_id_of(card))
    assert old is not None
    ok = await governed.driver.submit(
        view, user=APPROVER, reason="hotfix is 1.2.4", message=json.dumps(changed)
    )
    assert (ok.status, ok.text) == (200, "")
    (updated,) = await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    new_digest = await current_digest(governed, approval_id_of(card))
    assert new_digest in updated.text
    assert new_digest != old.arguments_digest
    assert old.arguments_digest not in updated.text

    await vote(governed, card, OTHER_APPROVER)
    await governed.fake.wait_for("chat.update", card_update(card, "Approved"))
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "Deployed"))
    await governed.settle()
    assert [(s, v) for s, v, _ in governed.effects.deploys] == [("payments", "1.2.4")]
    trail = await governed.service.approval_trail(approval_id_of(card), viewer=APPROVER)
    (change,) = [e for e in trail if e.kind == "arguments_changed"]
    assert change.detail["new_digest"] == new_digest


async def test_a_redacted_value_stays_hidden_and_unchanged_unless_replaced(
    governed: Bot,
) -> None:
    _, (card,) = await start_run(governed, "@secrets rotate the token")
    view = await open_modal(governed, card, "Approve with changes", user=APPROVER)
    arguments_block = next(b for b in view["blocks"] if b.get("block_id") == "arguments")
    shown = json.loads(arguments_block["element"]["initial_value"])
    assert shown["value"] == REDACTED
    shown["key"] = "slack_token_v2"
    await governed.driver.submit(view, user=APPROVER, reason="rename", message=json.dumps(shown))
    await governed.fake.wait_for("chat.update", card_update(card, "Approved"))
    await governed.settle()
    ((key, value),) = governed.effects.configs
    assert key == "slack_token_v2"
    assert value.startswith("xoxb-")  # the real secret, kept


async def test_removed_from_the_group_between_approval_and_execution(
    governed: Bot, clock: FakeClock
) -> None:
    root, (card,) = await start_run(governed)
    await vote(governed, card, APPROVER)
    await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    await governed.settle()
    governed.fake.usergroups[RELEASE_GROUP] = [OTHER_APPROVER]
    clock.advance(timedelta(seconds=61))  # past the group cache
    await vote(governed, card, OTHER_APPROVER)
    await governed.fake.wait_for("chat.update", card_update(card, "Approved"))
    await governed.fake.wait_for("chat.postMessage", in_thread(root, "Deployed"))  # scripted
    await governed.settle()
    assert governed.effects.deploys == []
    trail = await governed.service.approval_trail(approval_id_of(card), viewer=APPROVER)
    (refused,) = [e for e in trail if e.kind == "execution_refused"]
    assert refused.detail["why"] == f"approver {APPROVER} is no longer eligible (not_an_approver)"
    seen = json.dumps(governed.models["ops"].requests[-1].history)
    assert f"Not run: approver {APPROVER} is no longer eligible" in seen
    # The thread hears it from the bot whatever the model makes of it, and the card
    # loses its Revoke button: the call will not run.
    posted = governed.fake.calls_to("chat.postMessage")
    (notice,) = [c for c in posted if in_thread(root, "was not run")(c)]
    assert f"<@{REQUESTER}>" in notice.text
    assert f"(id `{approval_id_of(card)}`) was not run: {refused.detail['why']}." in notice.text
    (closed,) = [
        c for c in governed.fake.calls_to("chat.update") if card_update(card, "Not run:")(c)
    ]
    assert buttons_of(closed) == []


async def test_an_approved_call_revoked_before_it_runs_never_runs(bot: Bot) -> None:
    """Two calls in one turn: the first is approved (it waits for the second); its
    requester revokes it by command before the second is decided; the first never runs."""
    root, (first, second) = await start_run(bot, "@twin deploy both", cards=2)
    view = await open_modal(bot, first, "Approve", user=APPROVER)
    await bot.driver.submit(view, user=APPROVER, reason="payments ok")
    (approved,) = await bot.fake.wait_for("chat.update", card_update(first, "Approved"))
    assert buttons_of(approved) == ["Revoke"]
    await bot.settle()

    await bot.driver.command(
        "/approvals", f"revoke {approval_id_of(first)} wrong day", user=REQUESTER, channel=CHANNEL
    )
    await bot.fake.wait_for("chat.update", card_update(first, "Revoked"))
    view = await open_modal(bot, second, "Approve", user=OTHER_APPROVER)
    await bot.driver.submit(view, user=OTHER_APPROVER, reason="ledger ok")
    await bot.fake.wait_for("chat.postMessage", in_thread(root, "Both calls are settled."))
    await bot.settle()
    assert [(s, v) for s, v, _ in bot.effects.deploys] == [("ledger", "9.9.9")]

    # Revoking after the call ran changes nothing and says so.
    await bot.driver.command(
        "/approvals", f"revoke {approval_id_of(second)} too late", user=REQUESTER, channel=CHANNEL
    )
    answers = await bot.fake.wait_for(RESPONSE_URL, count=2)
    assert "Nothing changed: this call already ran (approved by" in answers[-1].text
    record = await bot.service.store.get_approval(approval_id_of(second))
    assert record is not None
    assert record.status == "approved"


async def test_when_slack_cannot_list_the_group_nobody_in_it_may_decide(
    governed: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    _, (card,) = await start_run(governed)
    governed.fake.fail("usergroups.users.list", error="missing_scope")
    await governed.driver.click(card, "Approve", user=APPROVER, ts=card.answer["ts"])
    await governed.fake.wait_for("chat.postEphemeral", told(APPROVER, "not an approver"))
    await governed.settle()
    assert "usergroups.users.list S0RELEASE failed (missing_scope)" in caplog.text
    assert governed.fake.calls_to("views.open") == []
    # The failure was not cached: the next click asks Slack again and may go on.
    await open_modal(governed, card, "Approve", user=APPROVER)


async def test_a_vote_counts_only_for_the_arguments_its_form_showed(governed: Bot) -> None:
    """A form opened before another approver changed the arguments must not approve
    the new ones, which its submitter never saw."""
    root, (card,) = await start_run(governed)
    stale_approve = await open_modal(governed, card, "Approve", user=OTHER_APPROVER)
    stale_edit = await open_modal(governed, card, "Approve with changes", user=OTHER_APPROVER)
    edit = await open_modal(governed, card, "Approve with changes", user=APPROVER)
    changed = {"service": "payments", "version": "9.9.9"}
    await governed.driver.submit(edit, user=APPROVER, reason="r", message=json.dumps(changed))
    await governed.fake.wait_for("chat.update", card_update(card, "1 of 2"))
    await governed.settle()

    await governed.driver.submit(stale_approve, user=OTHER_APPROVER, reason="saw 1.2.3")
    await governed.fake.wait_for("chat.postEphemeral", told(OTHER_APPROVER, "changed since"))
    own = {"service": "payments", "version": "1.2.5"}
    await governed.driver.submit(
        stale_edit, user=OTHER_APPROVER, reason="mine", message=json.dumps(own)
    )
    await governed.settle()
    told_other = [
        c
        for c in governed.fake.calls_to("chat.postEphemeral")
        if told(OTHER_APPROVER, "changed since")(c)
    ]
    assert len(told_other) == 2
    record = await governed.service.store.get_approval(approval_id_of(card))
    assert record is not None
    assert (record.status, record.arguments_digest) == (
        "pending",
        await current_digest(governed, approval_id_of(card)),
    )
    state = await governed.service.load_state(record.run_id)
    assert state.pending_calls()[0].arguments == changed
    assert governed.effects.deploys == []
    assert not [
        c for c in governed.fake.calls_to("chat.postMessage") if in_thread(root, "Deployed")(c)
    ]


async def current_digest(bot: Bot, approval_id: str) -> str:
    """The keyed digest of the approval's call as the run's state holds it now."""
    record = await bot.service.store.get_approval(approval_id)
    assert record is not None
    state = await bot.service.load_state(record.run_id)
    return state.call_digest(record.tool_call_id)
