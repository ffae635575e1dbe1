"""What stand-ins and escalation change in the trust model, at the service: they widen
who may decide only where a valid seal vouches for them, a stand-in and the person they
stand in for count once toward a quorum (at the vote, and again right before the call
runs), and a vote is judged by the absence that held when it was cast."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.errors import NotAuthorizedError
from tests.service.governance_helpers import (
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    Clock,
    FakeGroups,
    governed,
    policy,
)
from tests.service.service_harness import Harness, start
from tests.store.store_helpers import raw

FAR = datetime(2999, 1, 1, tzinfo=UTC)
TWO_OF_THREE = f"""
[defaults]
expires_after = "2h"

[tools.deploy_release]
approvers = ["{ALICE}", "{CAROL}", "UDAVE"]
required_approvals = 2
escalate_after = "30m"
escalate_to = ["UERIN"]
"""


async def pending_call(open_harness: Callable[..., Any], **options: Any) -> tuple[Harness, str]:
    harness = await governed(
        open_harness, policy=policy(TWO_OF_THREE), groups=FakeGroups({}), **options
    )
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    return harness, approval.approval_id


async def refusals(harness: Harness, approval_id: str) -> list[tuple[str, str]]:
    trail = await harness.store.audit_events(approval_id=approval_id)
    return [(e.actor or "", e.detail["why"]) for e in trail if e.kind == "refused"]


async def decide(harness: Harness, approval_id: str, who: str) -> None:
    await harness.service.decide(approval_id, approve=True, decider=who, reason="ok")


async def test_a_stand_in_written_into_the_database_makes_nobody_eligible(
    open_harness: Callable[..., Any], db_path: Any
) -> None:
    harness, approval_id = await pending_call(open_harness)
    with raw(db_path) as connection:
        connection.execute(
            "INSERT INTO stand_ins (away_user, created_at, stand_in, until) VALUES "
            "(?, '2000-01-01T00:00:00.000000Z', ?, '2999-01-01T00:00:00.000000Z')",
            (ALICE, MALLORY),
        )
    with pytest.raises(NotAuthorizedError, match="not an approver"):
        await decide(harness, approval_id, MALLORY)
    assert await refusals(harness, approval_id) == [(MALLORY, "not_an_approver")]


async def test_an_escalation_step_changed_in_the_database_widens_nothing(
    open_harness: Callable[..., Any], db_path: Any
) -> None:
    harness, approval_id = await pending_call(open_harness)
    with raw(db_path) as connection:
        connection.execute(
            "UPDATE approval_escalations SET approvers = ?, due_at = '2000-01-01T00:00:00.000000Z'",
            (MALLORY,),
        )
    with pytest.raises(NotAuthorizedError, match="not an approver"):
        await decide(harness, approval_id, MALLORY)


async def test_an_escalated_approver_is_eligible_from_the_steps_time_on(
    open_harness: Callable[..., Any],
) -> None:
    clock = Clock()
    harness, approval_id = await pending_call(open_harness, clock=clock)
    with pytest.raises(NotAuthorizedError):
        await decide(harness, approval_id, "UERIN")
    clock.advance(minutes=30)
    await decide(harness, approval_id, "UERIN")  # the sweep need not have told them yet
    await decide(harness, approval_id, CAROL)
    approval = await harness.store.get_approval(approval_id)
    assert approval is not None
    assert approval.status == "approved"


async def test_the_away_person_and_their_stand_in_count_once_even_when_racing(
    open_harness: Callable[..., Any],
) -> None:
    harness, approval_id = await pending_call(open_harness)
    await harness.store.set_stand_in(ALICE, stand_in=BOB, until=FAR)
    await decide(harness, approval_id, ALICE)
    with pytest.raises(NotAuthorizedError, match="one person's say counts once"):
        await decide(harness, approval_id, BOB)
    assert await refusals(harness, approval_id) == [(BOB, "same_say")]
    # A racing replica whose check ran before Alice's vote landed records Bob's vote: the
    # quorum looks met, and the check right before the call runs refuses it.
    approval = await harness.store.get_approval(approval_id)
    assert approval is not None
    digest = approval.arguments_digest
    outcome = await harness.store.vote(
        approval_id, decision="approved", voter=BOB, digest=digest, reason="racing"
    )
    assert outcome.result == "decided"
    await harness.service.resume_stuck(approval.run_id, actor="UADMIN")
    await harness.service.drain(10)
    assert harness.effect_lines() == []
    [(refused, why)] = harness.notifier.refused
    assert refused.approval_id == approval_id
    assert "count once" in why
