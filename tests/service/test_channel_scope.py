"""A call is shown to and decided by members of its channel only, admins aside, through
the real service and store; the channel directory is a dict (Slack's
conversations.members, the edge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot.errors import NotAuthorizedError
from bot.runtime import AbortCall
from tests.service.governance_helpers import ADMIN, ALICE, BOB, CAROL, audit_of, policy
from tests.service.service_harness import (
    APPROVER,
    REQUESTER,
    Harness,
    paused_with_an_uncertain_restart,
    start,
)

OPEN_TO_ANYONE = f'admins = ["{ADMIN}"]\n'  # anyone but the requester may approve
NOT_A_MEMBER = "not a member of the channel"


class FakeChannels:
    """Slack's channel membership, as the service sees it (a fake at the edge)."""

    def __init__(self, members: dict[str, set[str]]) -> None:
        self.members = members
        self.asked: list[tuple[str, str]] = []

    async def is_member(self, channel_id: str, user: str) -> bool:
        self.asked.append((channel_id, user))
        return user in self.members.get(channel_id, set())


async def scoped(open_harness: Callable[..., Any], members: set[str]) -> Harness:
    harness: Harness = await open_harness(
        policy=policy(OPEN_TO_ANYONE), channels=FakeChannels({"C-ops": members})
    )
    return harness


async def test_a_non_member_neither_sees_nor_decides_a_call_of_the_channel(
    open_harness: Callable[..., Any],
) -> None:
    harness = await scoped(open_harness, {REQUESTER, ALICE})
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    service = harness.service

    assert (await service.pending_for(BOB)).items == ()
    with pytest.raises(NotAuthorizedError, match=NOT_A_MEMBER):
        await service.approval_view(approval.approval_id, viewer=BOB)
    with pytest.raises(NotAuthorizedError, match=NOT_A_MEMBER):
        await service.approval_trail(approval.approval_id, viewer=BOB)
    with pytest.raises(NotAuthorizedError, match=NOT_A_MEMBER):
        await service.decide(approval.approval_id, approve=True, decider=BOB, reason="me")
    with pytest.raises(NotAuthorizedError, match="may revoke"):
        await service.revoke(approval.approval_id, actor=BOB, reason="no")
    assert await harness.pending(run.run_id) == [approval]
    refused = await audit_of(harness, run.run_id, "refused")
    assert [(r["actor"], r["why"]) for r in refused] == [
        (BOB, "not_a_channel_member"),
        (BOB, "not_authorized"),
    ]

    [mine] = (await service.pending_for(ALICE)).items
    assert mine.can_decide
    requester_view = await service.approval_view(approval.approval_id, viewer=REQUESTER)
    assert requester_view.can_revoke
    admin_view = await service.approval_view(approval.approval_id, viewer=ADMIN)
    assert admin_view.can_decide  # admins aside: no membership needed
    result = await service.decide(approval.approval_id, approve=True, decider=ALICE, reason="ok")
    assert result.approval.status == "approved"
    await service.drain()
    assert [r.approval_id for r in await service.recent_decisions(viewer=ALICE)] == [
        approval.approval_id
    ]
    assert await service.recent_decisions(viewer=BOB) == []
    assert len(await service.recent_decisions()) == 1  # no viewer: the operator's view


async def test_a_call_started_in_a_direct_message_is_scoped_by_the_policy_alone(
    open_harness: Callable[..., Any],
) -> None:
    channels = FakeChannels({})
    harness: Harness = await open_harness(policy=policy(OPEN_TO_ANYONE), channels=channels)
    run = await harness.service.start_run(
        agent_name=None, task="restart api", requester=REQUESTER, channel="D0DIRECT"
    )
    [approval] = await harness.pending(run.run_id)
    assert [
        view.approval.approval_id for view in (await harness.service.pending_for(BOB)).items
    ] == [approval.approval_id]
    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=BOB, reason="ok"
    )
    assert result.approval.status == "approved"
    assert channels.asked == []


async def test_an_approver_who_left_the_channel_no_longer_counts_at_execution(
    open_harness: Callable[..., Any],
) -> None:
    members = {REQUESTER, ALICE, CAROL}
    harness = await scoped(open_harness, members)
    run = await start(harness, "restart api")
    [approval] = await harness.pending(run.run_id)
    result = await harness.service.decide(
        approval.approval_id, approve=True, decider=ALICE, reason="ok"
    )
    assert result.approval.status == "approved"
    members.discard(ALICE)  # before the resume reaches the call
    await harness.service.drain()
    assert harness.effect_lines() == []
    [(_, reason)] = harness.notifier.refused
    assert "no longer eligible (not_a_channel_member)" in reason


async def test_only_members_reconcile_an_uncertain_call_of_the_channel(
    open_harness: Callable[..., Any],
) -> None:
    harness = await scoped(open_harness, {REQUESTER, APPROVER, ALICE})
    run_id = await paused_with_an_uncertain_restart(harness)
    with pytest.raises(NotAuthorizedError):
        await harness.service.reconcile(run_id, actor=BOB, resolution=AbortCall())
    run = await harness.service.reconcile(run_id, actor=ALICE, resolution=AbortCall())
    assert run.status == "resuming"
