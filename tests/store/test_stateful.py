"""A hypothesis state machine drives approvals and the ledger on a real SQLite file and
checks every answer against a small in-memory model; the audit chain must verify after
every step."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from bot.errors import (
    ExecutionKeyConflict,
    LeaseHeldError,
    LeaseLostError,
    ResolutionError,
    UnknownCallError,
)
from bot.runtime.journal import Fresh, Interrupted, Recorded, Uncertain
from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.keys import generate_key
from tests.store.store_helpers import T0, Clock, make_run, new_approval

CALLS = ("c1", "c2", "c3")
OWNERS = ("w1", "w2")
LEASE = 30.0


@dataclass(kw_only=True)
class ModelApproval:
    call: str
    status: str = "pending"
    decider: str | None = None
    expires_at: datetime | None = None
    created: datetime


@dataclass(kw_only=True)
class ModelEntry:
    digest: str
    created: datetime
    state: str = "executing"
    attempt: int = 1
    version: int = 1
    owner: str | None = None
    expires: datetime | None = None
    result: tuple[str, bool] | None = None


@dataclass(kw_only=True)
class Model:
    approvals: dict[str, ModelApproval] = field(default_factory=dict)
    ledger: dict[str, ModelEntry] = field(default_factory=dict)


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.Runner()
        self.tmp = tempfile.TemporaryDirectory()
        self.clock = Clock(now=T0)
        self.model = Model()
        self.counter = 0
        keyring = KeyRing([generate_key("k1")])
        self.store: SqliteStore = self.run(
            open_store(str(Path(self.tmp.name) / "m.db"), keyring=keyring, clock=self.clock,
                       environ={})
        )  # fmt: skip
        self.run(make_run(self.store))

    def run(self, coroutine: Any) -> Any:
        return self.loop.run(coroutine)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.tmp.cleanup()

    # -- approvals ---------------------------------------------------------------------
    @rule(call=st.sampled_from(CALLS), ttl=st.sampled_from([None, 60, 600]))
    def add(self, call: str, ttl: int | None) -> None:
        self.counter += 1
        expires = None if ttl is None else self.clock.now + timedelta(seconds=ttl)
        new = new_approval(call=call, expires_at=expires, approval_id=f"ap-{self.counter}")
        (record,) = self.run(self.store.add_approvals([new]))
        open_ids = [
            aid for aid, a in self.model.approvals.items()
            if a.call == call and a.status != "revoked"
        ]  # fmt: skip
        if open_ids:
            assert record.approval_id == open_ids[0]
        else:
            assert record.approval_id == new.approval_id
            self.model.approvals[new.approval_id] = ModelApproval(
                call=call, expires_at=expires, created=self.clock.now
            )

    @precondition(lambda self: self.model.approvals)
    @rule(data=st.data(), decision=st.sampled_from(["approved", "rejected"]),
          decider=st.sampled_from(["U1", "U2"]))  # fmt: skip
    def decide(
        self, data: st.DataObject, decision: Literal["approved", "rejected"], decider: str
    ) -> None:
        approval_id = data.draw(st.sampled_from(sorted(self.model.approvals)))
        expected = self.model.approvals[approval_id]
        outcome = self.run(
            self.store.decide(approval_id, decision=decision, decider=decider, reason="r")
        )
        live = expected.expires_at is None or expected.expires_at > self.clock.now
        if expected.status == "pending" and live:
            assert outcome.won
            expected.status, expected.decider = decision, decider
        else:
            assert not outcome.won
            if expected.status == "pending":
                expected.status = "expired"
        assert outcome.record.status == expected.status
        assert outcome.record.decider == expected.decider

    @precondition(lambda self: self.model.approvals)
    @rule(data=st.data())
    def revoke(self, data: st.DataObject) -> None:
        approval_id = data.draw(st.sampled_from(sorted(self.model.approvals)))
        expected = self.model.approvals[approval_id]
        outcome = self.run(self.store.revoke(approval_id, actor="OPS", reason=None))
        # a ledger row older than the approval is an earlier turn's call with the same id
        entry = self.model.ledger.get(f"key-{expected.call}")
        executed = entry is not None and entry.created >= expected.created
        allowed = expected.status == "pending" or (expected.status == "approved" and not executed)
        assert outcome.won == allowed
        if allowed:
            expected.status = "revoked"
        assert outcome.record.status == expected.status

    @rule()
    def expire_due(self) -> None:
        expired = self.run(self.store.expire_due())
        due = {
            aid for aid, a in self.model.approvals.items()
            if a.status == "pending" and a.expires_at is not None
            and a.expires_at <= self.clock.now
        }  # fmt: skip
        assert {r.approval_id for r in expired} == due
        for aid in due:
            self.model.approvals[aid].status = "expired"

    @rule(seconds=st.sampled_from([1, 29, 31, 61, 601]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    # -- ledger ------------------------------------------------------------------------
    @rule(call=st.sampled_from(CALLS), digest=st.sampled_from(["d1", "d1", "d2"]),
          owner=st.sampled_from(OWNERS), redispatch=st.booleans())  # fmt: skip
    def claim(self, call: str, digest: str, owner: str, redispatch: bool) -> None:
        key = f"key-{call}"
        try:
            got: Any = self.run(
                self.store.ledger_claim(
                    execution_key=key,
                    arguments_digest=digest,
                    run_id="run-1",
                    tool_call_id=call,
                    tool_name="deploy_release",
                    owner=owner,
                    lease_seconds=LEASE,
                    redispatch=redispatch,
                )
            )
        except (ExecutionKeyConflict, LeaseHeldError) as error:
            got = type(error)
        assert got == self.expected_claim(key, digest, owner, redispatch)

    def expected_claim(self, key: str, digest: str, owner: str, redispatch: bool) -> Any:
        entry = self.model.ledger.get(key)
        now = self.clock.now
        if entry is None:
            self.model.ledger[key] = ModelEntry(
                digest=digest, owner=owner, expires=now + timedelta(seconds=LEASE), created=now
            )
            return Fresh(lease_token=1, attempt=1)
        if entry.digest != digest:
            return ExecutionKeyConflict
        if entry.state in ("succeeded", "failed_terminal"):
            assert entry.result is not None
            return Recorded(result=entry.result[0], is_error=entry.result[1])
        if entry.state == "uncertain" and not redispatch:
            return Uncertain()
        if entry.state == "executing":
            assert entry.expires is not None
            if entry.owner != owner and entry.expires > now:
                return LeaseHeldError
            if not redispatch:
                return Interrupted(attempt=entry.attempt)
        entry.state, entry.attempt, entry.version = (
            "executing",
            entry.attempt + 1,
            entry.version + 1,
        )
        entry.owner, entry.expires, entry.result = owner, now + timedelta(seconds=LEASE), None
        return Fresh(lease_token=entry.version, attempt=entry.attempt)

    @precondition(lambda self: self.model.ledger)
    @rule(data=st.data(), stale=st.booleans(),
          outcome=st.sampled_from(["ok", "error", "retryable"]))  # fmt: skip
    def record(self, data: st.DataObject, stale: bool, outcome: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.model.ledger)))
        entry = self.model.ledger[key]
        token = entry.version - 1 if stale else entry.version
        try:
            self.run(
                self.store.ledger_record_result(
                    execution_key=key,
                    lease_token=token,
                    result=f"{outcome}-{token}",
                    is_error=outcome != "ok",
                    retryable=outcome == "retryable",
                )
            )
            lost = False
        except LeaseLostError:
            lost = True
        assert lost == (stale or entry.state != "executing")
        if not lost:
            entry.state = {"ok": "succeeded", "error": "failed_terminal"}.get(
                outcome, "failed_retryable"
            )
            entry.result, entry.owner = (f"{outcome}-{token}", outcome != "ok"), None

    @rule(call=st.sampled_from(CALLS))
    def mark_uncertain(self, call: str) -> None:
        key = f"key-{call}"
        entry = self.model.ledger.get(key)
        try:
            self.run(self.store.ledger_mark_uncertain(execution_key=key))
        except UnknownCallError:
            assert entry is None
            return
        assert entry is not None
        if entry.state == "executing":
            entry.state, entry.version, entry.owner = "uncertain", entry.version + 1, None

    @rule(call=st.sampled_from(CALLS))
    def resolve(self, call: str) -> None:
        key = f"key-{call}"
        entry = self.model.ledger.get(key)
        try:
            self.run(self.store.ledger_resolve_with_result(execution_key=key, result="verified"))
        except UnknownCallError:
            assert entry is None
            return
        except ResolutionError:
            assert entry is not None
            assert entry.state not in ("uncertain", "executing")
            return
        assert entry is not None
        assert entry.state in ("uncertain", "executing")
        entry.state, entry.version, entry.result = (
            "succeeded",
            entry.version + 1,
            ("verified", False),
        )
        entry.owner = None

    # -- invariants --------------------------------------------------------------------
    @invariant()
    def store_matches_model(self) -> None:
        records = self.run(self.store.list_approvals(limit=1000))
        assert {r.approval_id: r.status for r in records} == {
            aid: a.status for aid, a in self.model.approvals.items()
        }
        entries = self.run(self.store.ledger_entries(limit=1000))
        assert {e.execution_key: (e.state, e.attempt, e.lease_version) for e in entries} == {
            key: (m.state, m.attempt, m.version) for key, m in self.model.ledger.items()
        }

    @invariant()
    def audit_chain_verifies(self) -> None:
        assert self.run(self.store.verify_audit()).ok


def test_store_against_model() -> None:
    run_state_machine_as_test(
        StoreMachine,
        settings=settings(
            max_examples=20,
            stateful_step_count=60,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
