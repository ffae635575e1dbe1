"""A closing decision's card update is told beside its resume: the call's effect does not
wait for Slack's round trip, and a later update of the same card waits for it, so the
card never ends on an older state."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.service import Location
from bot.service.events import ApprovalDecided, Event
from tests.polling import until
from tests.service.service_harness import (
    APPROVER,
    Harness,
    RecordingNotifier,
    start,
    swap_paused_version,
)


@dataclass
class HoldingNotifier(RecordingNotifier):
    """Holds the card update of an approved call (Slack slow to answer) until released."""

    released: asyncio.Event = field(default_factory=asyncio.Event)

    async def notify(self, event: Event) -> Location | None:
        if isinstance(event, ApprovalDecided) and event.approval.status == "approved":
            await self.released.wait()
        return await super().notify(event)


async def _present(value: Any) -> Any:
    return value or None


async def test_the_effect_does_not_wait_for_the_card_update(
    open_harness: Callable[..., Any],
) -> None:
    notifier = HoldingNotifier()
    harness: Harness = await open_harness(notifier=notifier)
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    deciding = asyncio.create_task(
        harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="go")
    )
    await until(lambda: _present(harness.effect_lines()), "the tool ran while the card waited")
    assert notifier.of(ApprovalDecided) == []  # the card update is still on its way
    notifier.released.set()
    result = await deciding  # decide() still answers once the card is updated
    assert result.resume_started
    assert [e.approval.status for e in notifier.of(ApprovalDecided)] == ["approved"]
    await harness.service.drain()
    assert "payments" in notifier.answer(run.run_id)


async def test_a_later_update_of_the_same_card_waits_for_the_one_told_beside(
    open_harness: Callable[..., Any],
) -> None:
    notifier = HoldingNotifier()
    harness: Harness = await open_harness(notifier=notifier)
    run = await start(harness)
    [approval] = await harness.pending(run.run_id)
    # Someone able to write the store swaps the version: the resume voids the approval
    # and updates the same card to say so, while the "approved" update is still held.
    await swap_paused_version(harness, run.run_id, "6.6.6")
    deciding = asyncio.create_task(
        harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    )

    async def voided() -> bool | None:
        row = await harness.store.get_approval(approval.approval_id)
        return True if row is not None and row.status == "revoked" else None

    await until(voided, "the resume voided the approval")
    notifier.released.set()
    await deciding
    await harness.service.drain()
    statuses = [e.approval.status for e in notifier.of(ApprovalDecided)]
    assert statuses == ["approved", "revoked"]  # the card ends on what is true
    assert harness.effect_lines() == []
