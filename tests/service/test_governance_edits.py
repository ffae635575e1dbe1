"""Approve with changes, authorized reconciliation, and the read models for Slack."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.credentials import REDACTED
from bot.errors import AlreadyDecidedError, InputError, NotAuthorizedError, ResolutionError
from bot.runtime import AbortCall, RetryCall, VerifiedResult
from bot.runtime.decisions import ABORTED_MESSAGE
from tests.service.governance_helpers import (
    ADMIN,
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    Clock,
    FakeGroups,
    audit_of,
    governed,
    policy,
)
from tests.service.service_harness import (
    OPS_TOKEN,
    REQUESTER,
    paused_with_an_uncertain_restart,
    start,
)
from tests.states import own_state

SECRET = "xoxp-5555555555-6666666666-abcdefabcdef"


async def test_invalid_changes_are_refused_and_change_nothing(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    before = await harness.store.get_run(run.run_id)

    with pytest.raises(InputError, match=r"do not fit deploy_release.*version"):
        await harness.service.approve_with_changes(
            approval.approval_id, decider=ALICE, reason="r", arguments={"version": 5}
        )
    with pytest.raises(InputError, match=r"\$\.extra still holds the redaction marker"):
        await harness.service.approve_with_changes(
            approval.approval_id,
            decider=ALICE,
            reason="r",
            arguments={"version": REDACTED, "extra": REDACTED},  # the marker kept: fine
        )

    after = await harness.store.get_approval(approval.approval_id)
    assert after == approval
    assert (await harness.store.get_run(run.run_id)) == before
    assert (await harness.store.votes([approval.approval_id])) == {approval.approval_id: []}


async def test_changed_arguments_get_a_new_digest_drop_earlier_votes_and_run(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="ok")

    changed = await harness.service.approve_with_changes(
        approval.approval_id, decider=BOB, reason="use the hotfix", arguments={"version": "1.2.4"}
    )
    state = await own_state(harness.service, run.run_id)
    [call] = state.pending_calls()
    assert call.arguments == {"service": "payments", "version": "1.2.4"}
    new_digest = state.call_digest(call)
    assert changed.approval.arguments_digest == new_digest != approval.arguments_digest
    assert (changed.approval.status, changed.approvals_count, changed.voters) == (
        "pending",
        1,
        (BOB,),
    )
    assert changed.approval.amended_by == BOB
    assert json.loads(changed.approval.snapshot)["arguments"]["version"] == "1.2.4"
    assert harness.notifier.updated[-1].approval.arguments_digest == new_digest
    state = await own_state(harness.service, run.run_id)
    [pending] = state.pending_calls()
    assert pending.arguments == {"service": "payments", "version": "1.2.4"}

    done = await harness.service.decide(
        approval.approval_id, approve=True, decider=ALICE, reason="hotfix is fine"
    )
    assert done.approval.status == "approved"
    assert done.voters == (BOB, ALICE)
    await harness.service.drain()

    [effect] = harness.effect_lines()
    assert effect["arguments"] == {"service": "payments", "version": "1.2.4"}
    assert "changed this call's arguments" in harness.notifier.answer(run.run_id)
    [change] = await audit_of(harness, run.run_id, "arguments_changed")
    assert (change["actor"], change["old_digest"], change["new_digest"]) == (
        BOB,
        approval.arguments_digest,
        new_digest,
    )


async def test_redacted_fields_keep_their_real_value_unless_replaced(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness, policy=policy("[defaults]\nrequire_reason = true"))
    run = await start(harness, f"set payments slack_token={SECRET}")
    [approval] = await harness.pending(run.run_id)
    shown = json.loads(approval.snapshot)["arguments"]
    assert shown["value"] == REDACTED

    shown["service"] = "billing"
    result = await harness.service.approve_with_changes(
        approval.approval_id, decider=ALICE, reason="billing, not payments", arguments=shown
    )
    assert result.approval.status == "approved"
    await harness.service.drain()

    state = await own_state(harness.service, run.run_id)
    [call] = [
        c for item in state.history if item["type"] == "assistant" for c in item["tool_calls"]
    ]
    assert call["arguments"] == {"service": "billing", "key": "slack_token", "value": SECRET}
    assert SECRET not in result.approval.snapshot
    assert OPS_TOKEN not in state.to_json()
    [effect] = harness.effect_lines()
    assert effect["tool"] == "set_config"
    assert effect["arguments"]["service"] == "billing"


async def test_changes_need_an_eligible_approver_and_a_paused_run(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    with pytest.raises(NotAuthorizedError):
        await harness.service.approve_with_changes(
            approval.approval_id, decider=MALLORY, reason="r", arguments={"version": "9"}
        )
    with pytest.raises(NotAuthorizedError):
        await harness.service.approve_with_changes(
            approval.approval_id, decider=REQUESTER, reason="r", arguments={"version": "9"}
        )
    with pytest.raises(ResolutionError, match="arguments changed since you saw them"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=ALICE, reason="r", digest="0" * 64
        )
    assert (await harness.store.get_approval(approval.approval_id)) == approval


async def test_an_edit_of_arguments_no_longer_current_changes_nothing(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    before = await harness.store.get_run(run.run_id)

    with pytest.raises(ResolutionError, match="arguments changed since you saw them"):
        await harness.service.approve_with_changes(
            approval.approval_id,
            decider=ALICE,
            reason="r",
            arguments={"version": "9"},
            digest="0" * 64,
        )
    assert (await harness.store.get_run(run.run_id)) == before  # state not written
    assert (await harness.store.get_approval(approval.approval_id)) == approval
    refusals = await audit_of(harness, run.run_id, "refused")
    assert [r["why"] for r in refusals] == ["stale_digest"]


async def test_reconcile_is_for_admins_and_eligible_approvers(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(
        open_harness,
        policy=policy(f"admins = ['{ADMIN}']\n[tools.restart_service]\napprovers = ['{CAROL}']"),
    )
    run_id = await paused_with_an_uncertain_restart(harness, CAROL)

    for outsider in (MALLORY, REQUESTER):
        with pytest.raises(NotAuthorizedError, match="admin or an approver of restart_service"):
            await harness.service.reconcile(run_id, actor=outsider, resolution=AbortCall())
    paused = await harness.store.get_run(run_id)
    assert paused is not None
    assert paused.status == "paused"
    refusals = await audit_of(harness, run_id, "refused")
    assert [(r["actor"], r["action"]) for r in refusals] == [
        (MALLORY, "reconcile"),
        (REQUESTER, "reconcile"),
    ]

    await harness.service.reconcile(run_id, actor=ADMIN, resolution=AbortCall(), reason="checked")
    await harness.service.drain()
    assert ABORTED_MESSAGE in harness.notifier.answer(run_id)
    assert harness.effect_lines() == []


async def test_the_author_of_a_thread_reply_may_not_reconcile_the_call_it_led_to(
    open_harness: Callable[..., Any],
) -> None:
    """The requester of a call is the reply's author, for reconciling as for approving:
    BOB, an approver of the tool, asked for the restart in REQUESTER's thread."""
    harness = await governed(
        open_harness, policy=policy(f"[tools.restart_service]\napprovers = ['{BOB}', '{CAROL}']")
    )
    run = await harness.service.start_run(
        agent_name=None, task="status api", requester=REQUESTER, channel="C-ops"
    )
    await harness.service.follow_up(
        channel="C-ops", thread_ts=str(run.thread_ts), user=BOB, text="restart api"
    )
    [approval] = await harness.pending(run.run_id)
    assert approval.requester == BOB
    state = await own_state(harness.service, run.run_id)
    [call] = state.get_interruptions()
    await harness.store.ledger_claim(  # a worker dispatched it and died
        execution_key=call.execution_key,
        arguments_digest=state.call_digest(call),
        run_id=run.run_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        owner="dead-worker",
        lease_seconds=0.001,
    )
    await harness.service.decide(approval.approval_id, approve=True, decider=CAROL, reason="go")
    await harness.service.drain()
    assert [c.execution_key for c in harness.notifier.uncertain] == [call.execution_key]

    with pytest.raises(NotAuthorizedError, match="admin or an approver of restart_service"):
        await harness.service.reconcile(run.run_id, actor=BOB, resolution=AbortCall())
    bob_sees = await harness.service.approval_view(approval.approval_id, viewer=BOB)
    carol_sees = await harness.service.approval_view(approval.approval_id, viewer=CAROL)
    assert (bob_sees.can_reconcile, carol_sees.can_reconcile) == (False, True)
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert (refused["actor"], refused["action"]) == (BOB, "reconcile")

    await harness.service.reconcile(run.run_id, actor=CAROL, resolution=AbortCall())
    await harness.service.drain()
    assert harness.effect_lines() == []


@pytest.mark.parametrize("choice", ["result", "retry"])
async def test_an_eligible_approver_reconciles_with_a_result_or_a_retry(
    open_harness: Callable[..., Any], choice: str
) -> None:
    harness = await governed(
        open_harness, policy=policy(f"[tools.restart_service]\napprovers = ['{CAROL}']")
    )
    run_id = await paused_with_an_uncertain_restart(harness, CAROL)
    if choice == "result":
        await harness.service.reconcile(
            run_id, actor=CAROL, resolution=VerifiedResult(result="api restarted at 09:02")
        )
    else:
        await harness.service.reconcile(run_id, actor=CAROL, resolution=RetryCall())
    await harness.service.drain()

    answer = harness.notifier.answer(run_id)
    if choice == "result":
        assert "api restarted at 09:02" in answer
        assert harness.effect_lines() == []
    else:
        assert [e["tool"] for e in harness.effect_lines()] == ["restart_service"]
    [reconciled] = await audit_of(harness, run_id, "reconciled")
    assert (reconciled["actor"], reconciled["choice"]) == (CAROL, choice)


async def test_read_models_page_what_each_viewer_may_decide(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness, groups=FakeGroups({"SRELEASE": {ALICE}}))
    deploys = [await start(harness, f"deploy svc{n} 1.0.{n}") for n in range(5)]
    mine = await harness.service.start_run(
        agent_name=None, task="set api mode=fast", requester=ALICE, channel="C-ops"
    )

    seen: list[str] = []
    cursor = None
    while True:
        page = await harness.service.pending_for(ALICE, limit=2, cursor=cursor)
        seen += [view.approval.run_id for view in page.items]
        assert all(view.can_decide for view in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [run.run_id for run in deploys]  # not her own set_config

    bob = await harness.service.pending_for(BOB, limit=10)
    assert [v.approval.run_id for v in bob.items] == [mine.run_id]  # anyone may: set_config
    own = await harness.service.pending_for(REQUESTER, limit=10)
    assert [v.approval.run_id for v in own.items] == [mine.run_id]  # never their own runs

    [first] = await harness.pending(deploys[0].run_id)
    await harness.service.decide(first.approval_id, approve=True, decider=ALICE, reason="1")
    later = await harness.service.pending_for(ALICE, limit=10)
    assert first.approval_id not in [v.approval.approval_id for v in later.items]

    view = await harness.service.approval_view(first.approval_id, viewer=REQUESTER)
    assert (view.can_decide, view.can_revoke, view.can_reconcile) == (False, True, False)
    assert view.why_not is not None
    assert "requested this run" in view.why_not
    assert (view.approvals_count, view.required, view.voters) == (1, 2, (ALICE,))
    admin_view = await harness.service.approval_view(first.approval_id, viewer=MALLORY)
    assert (admin_view.can_decide, admin_view.can_revoke) == (False, False)
    flags = {
        viewer: (view.can_decide, view.can_revoke, view.can_reconcile)
        for viewer in (ALICE, BOB, ADMIN)
        for view in [await harness.service.approval_view(first.approval_id, viewer=viewer)]
    }
    assert flags == {
        ALICE: (False, True, True),  # voted already; an approver may revoke and reconcile
        BOB: (False, False, False),  # not an approver of deploy_release here
        ADMIN: (False, True, True),  # not an approver of deploy_release, but an admin
    }

    requested = await harness.service.requested_by(REQUESTER, limit=3)
    assert [v.approval.run_id for v in requested] == [r.run_id for r in deploys[::-1][:3]]
    trail = await harness.service.approval_trail(first.approval_id, viewer=ALICE)
    assert [e.kind for e in trail] == ["requested", "voted"]
    with pytest.raises(InputError, match="not a page cursor"):
        await harness.service.pending_for(ALICE, cursor="bm9wZQ")


async def test_recent_decisions_newest_first(open_harness: Callable[..., Any]) -> None:
    harness = await governed(open_harness)
    runs = [await start(harness, f"restart api{n}") for n in range(3)]
    for run in runs:
        [approval] = await harness.pending(run.run_id)
        await harness.service.decide(approval.approval_id, approve=False, decider=BOB, reason="n")
    await harness.service.drain()
    recent = await harness.service.recent_decisions(limit=2)
    assert [r.run_id for r in recent] == [runs[2].run_id, runs[1].run_id]


async def test_an_edit_that_does_not_land_leaves_the_arguments_as_they_were(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness = await governed(open_harness, clock=clock)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    clock.advance(hours=3)

    with pytest.raises(AlreadyDecidedError) as refused:
        await harness.service.approve_with_changes(
            approval.approval_id, decider=ALICE, reason="late", arguments={"version": "9.9.9"}
        )
    assert refused.value.status == "expired"
    await harness.service.drain()

    state = await own_state(harness.service, run.run_id)
    [call] = [
        c for item in state.history if item["type"] == "assistant" for c in item["tool_calls"]
    ]
    assert call["arguments"] == {"service": "payments", "version": "1.2.3"}
    assert harness.effect_lines() == []
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    assert (stored.status, stored.arguments_digest) == ("expired", approval.arguments_digest)
