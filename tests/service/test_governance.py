"""Governance through the real service, store and ops agent: eligibility, self approval,
quorum, expiry, revocation, execution-time re-checks, reminders.

Fakes only at the edges: the notifier records, the group directory is a dict (Slack's
usergroups.users.list), the clock is moved by the test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.errors import AlreadyDecidedError, ConfigError, InputError, NotAuthorizedError
from bot.service.applying import EXPIRED_MESSAGE, REVOKED_MESSAGE
from bot.service.events import Event, ExecutionRefused, Location
from tests.service.governance_helpers import (
    ADMIN,
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    RELEASE,
    Clock,
    FakeGroups,
    Gate,
    audit_of,
    gated_registry,
    governed,
    policy,
)
from tests.service.service_harness import REQUESTER, Harness, RecordingNotifier, open_service, start
from tests.states import own_state


async def test_self_approval_is_refused_and_audited(open_harness: Callable[..., Any]) -> None:
    harness = await governed(open_harness, groups=FakeGroups({"SRELEASE": {REQUESTER}}))
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)

    with pytest.raises(NotAuthorizedError, match="you requested this run"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=REQUESTER, reason="mine"
        )

    assert (await harness.pending(run.run_id)) == [approval]
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert (refused["actor"], refused["why"]) == (REQUESTER, "self_approval")
    assert harness.effect_lines() == []


async def test_a_non_member_is_refused_and_a_member_decides(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)

    with pytest.raises(NotAuthorizedError, match=r"not an approver.*SRELEASE"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=MALLORY, reason="let me"
        )
    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=ALICE, reason="CR-7"
    )
    assert result.approval.status == "approved"
    assert result.resume_started
    await harness.service.drain()

    [effect] = harness.effect_lines()
    assert effect["tool"] == "restart_service"
    [refused] = await audit_of(harness, run.run_id, "refused")
    assert (refused["actor"], refused["why"]) == (MALLORY, "not_an_approver")


async def test_quorum_of_two_counts_the_same_person_once(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    assert approval.required_approvals == 2

    first = await harness.service.decide(
        approval.approval_id, approve=True, decider=ALICE, reason="looks right"
    )
    assert (first.approval.status, first.approvals_count, first.required) == ("pending", 1, 2)
    assert first.voters == (ALICE,)
    assert not first.resume_started
    [progress] = harness.notifier.updated
    assert (progress.approvals_count, progress.required, progress.voters) == (1, 2, (ALICE,))

    with pytest.raises(AlreadyDecidedError, match=r"already voted.*needs 2 approvals.*1 so far"):
        await harness.service.decide(
            approval.approval_id, approve=True, decider=ALICE, reason="again"
        )
    view = await harness.service.approval_view(approval.approval_id, viewer=ALICE)
    assert (view.approvals_count, view.can_decide) == (1, False)
    assert harness.effect_lines() == []

    second = await harness.service.decide(
        approval.approval_id, approve=True, decider=BOB, reason="agreed"
    )
    assert second.approval.status == "approved"
    assert second.voters == (ALICE, BOB)
    assert second.resume_started
    await harness.service.drain()

    [effect] = harness.effect_lines()
    assert effect["tool"] == "deploy_release"
    [decided] = await audit_of(harness, run.run_id, "decided")
    assert decided["voters"] == [ALICE, BOB]
    assert [e["why"] for e in await audit_of(harness, run.run_id, "refused")] == ["already_voted"]
    assert len(await audit_of(harness, run.run_id, "voted")) == 1


async def test_one_rejection_rejects_a_quorum_approval(open_harness: Callable[..., Any]) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="ok")
    result = await harness.service.decide(
        approval.approval_id, approve=False, decider=BOB, reason="freeze", message="Not today."
    )
    assert result.approval.status == "rejected"
    assert (result.approval.decider, result.voters) == (BOB, (ALICE,))  # approvals so far
    view = await harness.service.approval_view(approval.approval_id, viewer=CAROL)
    assert (view.approvals_count, view.can_decide, view.can_revoke) == (1, False, False)
    await harness.service.drain()
    assert harness.effect_lines() == []
    assert "Not today." in harness.notifier.answer(run.run_id)


async def test_two_racing_final_votes_make_one_transition(
    open_harness: Callable[..., Any],
) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "deploy payments 1.2.3")
    [approval] = await harness.pending(run.run_id)
    await harness.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="1")

    outcomes = await asyncio.gather(
        harness.service.decide(approval.approval_id, approve=True, decider=BOB, reason="b"),
        harness.service.decide(approval.approval_id, approve=True, decider=CAROL, reason="c"),
        return_exceptions=True,
    )
    await harness.service.drain()

    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(won) == 1
    assert won[0].approval.status == "approved"
    assert len(lost) == 1
    assert isinstance(lost[0], AlreadyDecidedError)
    assert len(harness.effect_lines()) == 1
    assert len(await audit_of(harness, run.run_id, "decided")) == 1


async def test_a_required_reason_must_be_given(open_harness: Callable[..., Any]) -> None:
    harness = await governed(open_harness)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    with pytest.raises(InputError, match="reason is required"):
        await harness.service.decide(approval.approval_id, approve=True, decider=ALICE, reason=" ")
    assert (await harness.pending(run.run_id)) == [approval]


async def test_expiry_racing_a_click_expires_once_and_the_model_is_told(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness = await governed(open_harness, clock=clock)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    clock.advance(hours=2)  # exactly at expiry: no longer valid

    click, swept = await asyncio.gather(
        harness.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="late"),
        harness.service.sweep(),
        return_exceptions=True,
    )
    await harness.service.drain()

    assert isinstance(click, AlreadyDecidedError)
    assert click.status == "expired"
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    assert stored.status == "expired"
    assert harness.effect_lines() == []
    assert len(await audit_of(harness, run.run_id, "expired")) == 1
    assert [a.approval_id for a in harness.notifier.expired_notices] == [approval.approval_id]
    assert [a.status for a in harness.notifier.decided] == ["expired"]
    assert EXPIRED_MESSAGE in harness.notifier.answer(run.run_id)
    assert isinstance(swept, list)


async def test_the_sweeper_expires_and_resumes_with_the_expiry_message(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness = await governed(open_harness, clock=clock)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    clock.advance(hours=1, minutes=59)
    assert await harness.service.sweep() == []
    clock.advance(minutes=1)

    [expired] = await harness.service.sweep()
    await harness.service.drain()

    assert expired.approval_id == approval.approval_id
    assert [a.approval_id for a in harness.notifier.expired_notices] == [approval.approval_id]
    assert EXPIRED_MESSAGE in harness.notifier.answer(run.run_id)
    assert harness.effect_lines() == []


async def test_reminders_are_sent_once_even_across_a_restart(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness = await governed(open_harness, clock=clock)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    assert approval.expires_at == clock.now + timedelta(hours=2)
    assert approval.remind_at == clock.now + timedelta(hours=1)
    clock.advance(minutes=59)
    assert await harness.service.send_reminders() == []
    clock.advance(minutes=1)

    [reminded] = await harness.service.send_reminders()
    assert reminded.approval_id == approval.approval_id
    assert harness.notifier.reminders == [(reminded, ("SRELEASE",))]
    assert await harness.service.send_reminders() == []
    await harness.service.aclose()
    await harness.store.close()
    harness.closed = True

    again = await governed(open_harness, clock=clock)
    clock.advance(minutes=5)
    assert await again.service.send_reminders() == []
    assert again.notifier.reminders == []
    assert len(await audit_of(again, run.run_id, "reminded")) == 1


async def test_revoked_before_it_runs_never_runs(open_harness: Callable[..., Any]) -> None:
    harness = await governed(open_harness, groups=FakeGroups({"SRELEASE": {ALICE, BOB}}))
    run = await start(harness, "restart api and deploy payments 1.2.3")
    restart, deploy = await harness.pending(run.run_id)
    await harness.service.decide(restart.approval_id, approve=True, decider=ALICE, reason="ok")

    with pytest.raises(NotAuthorizedError, match="requester, an approver"):
        await harness.service.revoke(restart.approval_id, actor=MALLORY, reason="nope")
    revoked = await harness.service.revoke(
        restart.approval_id, actor=REQUESTER, reason="wrong service"
    )
    assert (revoked.status, revoked.revoked_by, revoked.revoke_reason) == (
        "revoked",
        REQUESTER,
        "wrong service",
    )
    assert harness.notifier.decided[-1].status == "revoked"
    await harness.service.decide(deploy.approval_id, approve=True, decider=ALICE, reason="a")
    await harness.service.decide(deploy.approval_id, approve=True, decider=BOB, reason="b")
    await harness.service.drain()

    assert [e["tool"] for e in harness.effect_lines()] == ["deploy_release"]
    assert REVOKED_MESSAGE in harness.notifier.answer(run.run_id)
    [audited] = await audit_of(harness, run.run_id, "revoked")
    assert (audited["actor"], audited["reason"]) == (REQUESTER, "wrong service")
    with pytest.raises(AlreadyDecidedError, match="already revoked by"):
        await harness.service.revoke(restart.approval_id, actor=ADMIN, reason="again")


async def test_revocation_racing_execution(
    open_harness: Callable[..., Any], effects_path: Any
) -> None:
    gate = Gate()
    harness = await governed(
        open_harness,
        registry=gated_registry(gate, effects_path),
        policy=policy("admins = ['UADMIN']"),
    )
    run = await harness.service.start_run(
        agent_name=None, task="go", requester=REQUESTER, channel="C-ops"
    )
    hold, launch = await harness.pending(run.run_id)
    await harness.service.decide(hold.approval_id, approve=True, decider=ALICE, reason="h")
    await harness.service.decide(launch.approval_id, approve=True, decider=ALICE, reason="l")
    await gate.entered.wait()  # the resume is executing `hold`; `launch` has not started

    revoked = await harness.service.revoke(launch.approval_id, actor=ADMIN, reason="abort")
    with pytest.raises(AlreadyDecidedError, match="already started or run"):
        await harness.service.revoke(hold.approval_id, actor=ADMIN, reason="too late")
    gate.release.set()
    await harness.service.drain()

    assert revoked.status == "revoked"
    assert gate.ran == ["hold"]
    [refused] = await audit_of(harness, run.run_id, "execution_refused")
    assert refused["why"] == "its approval is revoked"
    [(told, why)] = harness.notifier.refused
    assert (told.approval_id, told.status, why) == (
        launch.approval_id,
        "revoked",
        "its approval is revoked",
    )
    final = await harness.store.get_run(run.run_id)
    assert final is not None
    assert final.status == "completed"


async def test_an_approver_removed_from_the_group_stops_the_execution(
    open_harness: Callable[..., Any],
) -> None:
    groups = FakeGroups({"SRELEASE": {ALICE, BOB}})
    harness = await governed(open_harness, groups=groups)
    run = await start(harness, "deploy payments 1.2.3 and restart api")
    deploy, restart = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=ALICE, reason="a")
    await harness.service.decide(deploy.approval_id, approve=True, decider=BOB, reason="b")
    groups.groups["SRELEASE"] = {BOB}  # Alice leaves the release group
    await harness.service.decide(restart.approval_id, approve=True, decider=BOB, reason="r")
    await harness.service.drain()

    assert [e["tool"] for e in harness.effect_lines()] == ["restart_service"]
    [refused] = await audit_of(harness, run.run_id, "execution_refused")
    assert refused["tool"] == "deploy_release"
    assert "approver UALICE is no longer eligible" in refused["why"]
    assert "no longer eligible" in harness.notifier.answer(run.run_id)
    [(told, why)] = harness.notifier.refused  # people hear it whatever the model says
    assert (told.approval_id, told.status, why) == (deploy.approval_id, "approved", refused["why"])


class RefusalUnpostable(RecordingNotifier):
    async def notify(self, event: Event) -> Location | None:
        if isinstance(event, ExecutionRefused):
            raise ConnectionError("slack unreachable")
        return await super().notify(event)


async def test_a_refusal_stands_when_people_cannot_be_told(
    open_harness: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    groups = FakeGroups({"SRELEASE": {ALICE, BOB}})
    harness = await governed(open_harness, groups=groups, notifier=RefusalUnpostable())
    run = await start(harness, "deploy payments 1.2.3")
    [deploy] = await harness.pending(run.run_id)
    await harness.service.decide(deploy.approval_id, approve=True, decider=ALICE, reason="a")
    groups.groups["SRELEASE"] = {BOB}
    await harness.service.decide(deploy.approval_id, approve=True, decider=BOB, reason="b")
    await harness.service.drain()

    assert harness.effect_lines() == []
    assert "Not run: approver UALICE is no longer eligible" in json.dumps(
        (await own_state(harness.service, run.run_id)).to_json()
    )
    final = await harness.store.get_run(run.run_id)
    assert final is not None
    assert final.status == "completed"
    assert "notifier.execution_refused failed" in caplog.text


async def test_the_service_refuses_a_policy_for_a_tool_no_agent_has(
    db_path: Path, effects_path: Path
) -> None:
    typo = policy("[tools.deploy_relase]\nrequired_approvals = 1")
    with pytest.raises(ConfigError, match=r"tools\.deploy_relase: no agent has a tool"):
        await open_service(db_path, effects_path, policy=typo)


async def test_votes_survive_a_restart(open_harness: Callable[..., Any]) -> None:
    before = await governed(open_harness)
    run = await start(before, "deploy payments 1.2.3")
    [approval] = await before.pending(run.run_id)
    await before.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="a")
    await before.service.aclose()
    await before.store.close()
    before.closed = True

    after = await governed(open_harness)
    with pytest.raises(AlreadyDecidedError, match="already voted"):
        await after.service.decide(approval.approval_id, approve=True, decider=ALICE, reason="b")
    done = await after.service.decide(approval.approval_id, approve=True, decider=BOB, reason="b")
    await after.service.drain()
    assert done.voters == (ALICE, BOB)
    assert [e["tool"] for e in after.effect_lines()] == ["deploy_release"]


class GatedGroups(FakeGroups):
    """Group lookups that, once armed, wait for the test: holds the last check right
    before an approved call runs."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def members(self, group_id: str) -> frozenset[str]:
        if self.armed:
            self.entered.set()
            await self.release.wait()
        return await super().members(group_id)


async def test_a_revocation_during_the_last_check_stops_the_call(
    open_harness: Callable[..., Any],
) -> None:
    """The revoke lands after the approval was re-read but before the ledger claim: it
    is told "it will not run", so the call must not run."""
    groups = GatedGroups()
    harness: Harness = await open_harness(
        policy=policy(f"[tools.deploy_release]\napprovers = ['{RELEASE}']"), groups=groups
    )
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=ALICE, reason="ok"
    )
    assert result.resume_started
    groups.armed = True
    await asyncio.wait_for(groups.entered.wait(), timeout=10)
    revoked = await harness.service.revoke(approval.approval_id, actor=REQUESTER, reason="stop")
    assert revoked.status == "revoked"
    groups.release.set()
    assert await harness.service.drain(timeout=10)
    assert harness.effect_lines() == []
    trail = [event.kind for event in await harness.store.audit_events(run_id=run.run_id)]
    assert "executed" not in trail
    assert "execution_refused" in trail
    state = await own_state(harness.service, run.run_id)
    results = [item for item in state.history if item["type"] == "tool_result"]
    assert "Not run: its approval is revoked" in json.dumps(results)
