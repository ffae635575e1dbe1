"""Reaching approvers in the store: absences and stand-ins (sealed), escalation steps
(sealed with the request, fired once), and the direct-message copies of cards (planned
once per person, claimed again when their sender died), on every engine."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from functools import partial

import pytest

from bot.errors import InputError
from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.keys import generate_key
from store.records import EscalationPlan, NewApproval, NewCopy
from tests.store.store_helpers import DIGEST, T0, Clock, make_run, new_approval, raw
from tests.store.test_sweeps import DEADLINE, holding, postgres_url, two_stores

__all__ = ["postgres_url", "two_stores"]

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def escalating(run_id: str = "run-1", call: str = "c1", *steps: EscalationPlan) -> NewApproval:
    plans = steps or (
        EscalationPlan(step=1, due_at=T0 + 30 * MINUTE, approvers=("S0ONCALL",)),
        EscalationPlan(step=2, due_at=T0 + HOUR, approvers=("U0CTO", "U0VP")),
    )
    return replace(new_approval(run_id, call), escalations=plans)


async def test_an_absence_is_sealed_replaced_and_ended(store: SqliteStore, clock: Clock) -> None:
    first = await store.set_stand_in("UALICE", stand_in="UBOB", until=T0 + 48 * HOUR)
    assert (first.stand_in, first.seal, first.covers(T0), first.covers(T0 + 48 * HOUR)) == (
        "UBOB", "valid", True, False,
    )  # fmt: skip
    clock.now = T0 + HOUR
    second = await store.set_stand_in("UALICE", stand_in="UCAROL", until=T0 + 24 * HOUR)
    assert await store.stand_ins_of(["UALICE", "UDAVE"], at=clock.now) == {"UALICE": second}
    assert [s.away_user for s in await store.standing_in_for("UBOB", at=clock.now)] == []
    # The first absence held for its hour: a vote cast then is judged by it.
    assert [s.stand_in for s in await store.standing_in_for("UBOB", at=T0 + MINUTE)] == ["UBOB"]
    clock.now = T0 + 2 * HOUR
    ended = await store.end_stand_in("UALICE", actor="UALICE")
    assert ended is not None
    assert ended.ended_at == clock.now
    assert await store.stand_ins_of(["UALICE"], at=clock.now) == {}
    assert await store.end_stand_in("UALICE", actor="UALICE") is None
    kinds = [(e.kind, e.detail.get("why")) for e in await store.audit_events()]
    assert kinds == [("away_set", None), ("away_ended", "replaced"), ("away_set", None),
                     ("away_ended", "back")]  # fmt: skip


async def test_an_absence_in_the_past_or_for_oneself_is_refused(store: SqliteStore) -> None:
    with pytest.raises(InputError, match="has passed"):
        await store.set_stand_in("UALICE", stand_in="UBOB", until=T0)
    with pytest.raises(InputError, match="yourself"):
        await store.set_stand_in("UALICE", stand_in="UALICE", until=T0 + HOUR)
    assert await store.audit_events() == []


async def test_a_stand_in_written_without_the_keys_makes_nobody_eligible(
    store: SqliteStore, database_url: str
) -> None:
    await store.set_stand_in("UALICE", stand_in="UBOB", until=T0 + HOUR)
    with raw(database_url) as connection:
        connection.execute(
            "INSERT INTO stand_ins (away_user, created_at, stand_in, until) VALUES "
            "('UCAROL', '2026-11-29T11:00:00.000000Z', 'UMALLORY', '2026-11-30T12:00:00.000000Z')"
        )
        connection.execute(  # Alice's seal moved onto Mallory
            "INSERT INTO stand_ins (away_user, created_at, stand_in, until, seal_key_id, seal) "
            "SELECT 'UDAVE', created_at, 'UMALLORY', until, seal_key_id, seal FROM stand_ins "
            "WHERE away_user = 'UALICE'"
        )
    found = await store.standing_in_for("UMALLORY", at=T0)
    assert sorted((s.away_user, s.seal) for s in found) == [
        ("UCAROL", "missing"), ("UDAVE", "mismatch"),
    ]  # fmt: skip
    assert (await store.stand_ins_of(["UALICE"], at=T0))["UALICE"].seal == "valid"


async def test_escalation_steps_are_sealed_with_the_request_and_fire_once(
    store: SqliteStore, clock: Clock
) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([escalating()])
    steps = await store.escalations(approval.approval_id)
    assert [(s.step, s.approvers, s.seal, s.fired_at) for s in steps] == [
        (1, ("S0ONCALL",), "valid", None), (2, ("U0CTO", "U0VP"), "valid", None),
    ]  # fmt: skip
    assert [s.in_force(T0 + 30 * MINUTE) for s in steps] == [True, False]
    assert await store.fire_escalations(now=T0 + 29 * MINUTE) == []
    clock.now = T0 + 45 * MINUTE
    [fired] = await store.fire_escalations(now=clock.now)
    assert (fired.approval.approval_id, fired.escalation.step) == (approval.approval_id, 1)
    assert fired.escalation.outcome == "escalated"
    assert await store.fire_escalations(now=clock.now) == []
    audited = [e for e in await store.audit_events() if e.kind == "escalated"]
    assert [(e.detail["step"], e.detail["to"]) for e in audited] == [(1, ["S0ONCALL"])]


async def test_a_step_of_a_closed_approval_is_skipped_never_told(store: SqliteStore) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([escalating()])
    await store.vote(approval.approval_id, decision="rejected", voter="U1", digest=DIGEST,
                     reason="no")  # fmt: skip
    assert await store.fire_escalations(now=T0 + 2 * HOUR) == []
    steps = await store.escalations(approval.approval_id)
    assert [(s.outcome, s.fired_at) for s in steps] == [("skipped", T0 + 2 * HOUR)] * 2


async def test_a_step_written_or_changed_without_the_keys_does_not_verify(
    store: SqliteStore, database_url: str
) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([escalating()])
    with raw(database_url) as connection:
        connection.execute(
            "UPDATE approval_escalations SET approvers = 'UMALLORY', due_at = ? WHERE step = 2",
            ("2026-11-29T12:00:00.000000Z",),
        )
        connection.execute(
            "INSERT INTO approval_escalations (approval_id, step, due_at, approvers) "
            "VALUES (?, 3, '2026-11-29T12:00:00.000000Z', 'UEVE')",
            (approval.approval_id,),
        )
    steps = await store.escalations(approval.approval_id)
    assert [(s.step, s.seal, s.in_force(T0 + MINUTE)) for s in steps] == [
        (1, "valid", False), (2, "mismatch", False), (3, "missing", False),
    ]  # fmt: skip


async def test_racing_sweeps_fire_each_step_once(store: SqliteStore, clock: Clock) -> None:
    await make_run(store)
    await store.add_approvals([escalating("run-1", f"c{n}") for n in range(12)])
    clock.now = T0 + 2 * HOUR
    rounds = await asyncio.gather(
        *(store.fire_escalations(now=clock.now, batch=5) for _ in range(4))
    )
    rounds.append(await store.fire_escalations(now=clock.now))  # what a held row left over
    fired = [(f.approval.approval_id, f.escalation.step) for got in rounds for f in got]
    assert len(fired) == len(set(fired)) == 24


async def test_a_copy_is_planned_once_per_person_and_claimed_again_when_its_sender_died(
    store: SqliteStore, clock: Clock
) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([new_approval("run-1", "c1")])
    people = [NewCopy(recipient="UA"), NewCopy(recipient="UB", stands_in_for="UC")]
    planned = await store.plan_copies(approval.approval_id, people, claim_until=T0 + MINUTE)
    assert [(c.recipient, c.stands_in_for, c.attempts) for c in planned] == [
        ("UA", None, 1), ("UB", "UC", 1),
    ]  # fmt: skip
    again = [NewCopy(recipient="UA"), NewCopy(recipient="UD", step=1)]
    added = await store.plan_copies(approval.approval_id, again, claim_until=T0 + MINUTE)
    assert [c.recipient for c in added] == ["UD"]
    await store.copy_posted(approval.approval_id, "UA", channel="D0UA", ts="1.1")
    claim = partial(store.claim_unsent_copies, claim_until=T0 + 3 * MINUTE, max_attempts=2)
    assert await claim(now=T0) == []  # still held by the planner
    clock.now = T0 + 2 * MINUTE
    reclaimed = await claim(now=clock.now)
    assert [(c.recipient, c.attempts) for c in reclaimed] == [("UB", 2), ("UD", 2)]
    assert await claim(now=T0 + 10 * MINUTE) == []  # tried twice
    posted = [c for c in await store.approval_copies(approval.approval_id) if c.posted]
    assert [(c.recipient, c.channel, c.ts) for c in posted] == [("UA", "D0UA", "1.1")]


async def test_the_copies_of_a_closed_approval_are_not_sent(store: SqliteStore) -> None:
    await make_run(store)
    [approval] = await store.add_approvals([new_approval("run-1", "c1")])
    await store.plan_copies(approval.approval_id, [NewCopy(recipient="UA")], claim_until=T0)
    await store.revoke(approval.approval_id, actor="U-REQ", reason="never mind")
    unsent = await store.claim_unsent_copies(now=T0 + MINUTE, claim_until=T0 + HOUR, max_attempts=5)
    assert unsent == []


async def test_rotation_reseals_stand_ins_and_escalation_steps(
    database_url: str, keyring: KeyRing
) -> None:
    store = await open_store(database_url, keyring=keyring, environ={}, clock=Clock())
    try:
        await make_run(store)
        [approval] = await store.add_approvals([escalating()])
        await store.set_stand_in("UALICE", stand_in="UBOB", until=T0 + HOUR)
    finally:
        await store.close()
    newer = KeyRing([generate_key("k2"), *keyring])
    rotated = await open_store(database_url, keyring=newer, environ={}, clock=Clock())
    try:
        report = await rotated.rotate_keys()
        assert not report.tampered
        steps = await rotated.escalations(approval.approval_id)
        assert [s.seal for s in steps] == ["valid", "valid"]
    finally:
        await rotated.close()
    only_newer = KeyRing([generate_key("k3"), newer.newest])
    reopened = await open_store(database_url, keyring=only_newer, environ={}, clock=Clock())
    try:
        assert [s.seal for s in await reopened.escalations(approval.approval_id)] == ["valid"] * 2
        absences = await reopened.stand_ins_of(["UALICE"], at=T0)
        assert absences["UALICE"].seal == "valid"
    finally:
        await reopened.close()


async def test_a_step_whose_approval_a_decision_holds_is_left_to_the_next_sweep(
    two_stores: tuple[SqliteStore, SqliteStore], postgres_url: str, clock: Clock
) -> None:
    """On Postgres, while a decision holds the approval's row, the sweep passes over its
    step (it neither waits nor tells); once the decision committed, the step is skipped."""
    first, second = two_stores
    await make_run(first)
    [approval] = await first.add_approvals([escalating()])
    clock.now = T0 + 45 * MINUTE
    async with holding(postgres_url, "approvals", "approval_id", approval.approval_id):
        async with asyncio.timeout(DEADLINE):
            assert await second.fire_escalations(now=clock.now) == []
    await first.vote(approval.approval_id, decision="approved", voter="U1", digest=DIGEST,
                     reason="ok")  # fmt: skip
    assert await second.fire_escalations(now=clock.now) == []
    steps = await first.escalations(approval.approval_id)
    assert [s.outcome for s in steps] == ["skipped", None]  # the second is not due yet
