"""A hypothesis state machine over the whole service on a real SQLite file: runs are
started, voted on, approved with changes, revoked, paused and let go on, expired by a
clock the machine moves, reconciled, and the process crashes (a vote committed and
nothing after it, or a resume cut off mid-call) and restarts as a new service on the
same file. After every step, whatever happened:

- no effect without a sealed quorum on the current digest: every line the downstream
  applied belongs to an approval that is `approved`, whose request seal and votes
  verify (bot.service.sealed) and whose current digest is the one that ran;
- at most one effect per execution key (a repeat the idempotent downstream recognised
  is not an effect), but for a `safe` tool, which may run again after a crash mid-call
  by its contract, with the same approved arguments;
- the audit chain verifies.

Refusals (not eligible, already decided, expired, a stale digest, a run that is not
paused) are the service's answers, all from bot.errors; anything else fails the test."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from bot.demo import ops_dependencies
from bot.demo.ops_tools import OPS_TOOLS
from bot.errors import ApprovalsError
from bot.runtime import AbortCall, ReplayPolicy, VerifiedResult
from bot.service.sealed import sealed_quorum
from store.records import ApprovalRecord
from tests.polling import WAIT_SECONDS
from tests.service.governance_helpers import (
    ADMIN,
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    Clock,
    FakeGroups,
    policy,
)
from tests.service.service_harness import (
    OPS_TOKEN,
    Harness,
    close_harness,
    open_service,
)

TASKS = (
    "deploy payments 1.2.3",
    "restart api",
    "deploy web 2.0.0 and restart worker",
    "set api mode=fast and deploy api 3.1.4",
)
PEOPLE = (ALICE, BOB, CAROL, MALLORY, ADMIN)
VOTERS = (BOB, CAROL, BOB, CAROL, ALICE, MALLORY)  # mostly eligible: quorums are met
REQUESTERS = (ALICE, ALICE, BOB)
RERUNNABLE = frozenset(
    tool.name for tool in OPS_TOOLS if ReplayPolicy(tool.replay_policy) is ReplayPolicy.SAFE
)  # may run again after a crash mid-call (set_config): their repeats are by contract
TOOL_SECONDS = 0.03  # each tool waits this long after its effect: the crash window
CRASH_POLL_SECONDS = 0.002


class ServiceMachine(RuleBasedStateMachine):
    """See the module doc. One event loop and one database file per example."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.Runner()
        self.tmp = tempfile.TemporaryDirectory()
        self.db_path = Path(self.tmp.name) / "approvals.db"
        self.effects = Path(self.tmp.name) / "effects.jsonl"
        self.clock = Clock()
        self.harness = self.run(self.open())
        self.runs: list[str] = []

    def run(self, coroutine: Any) -> Any:
        return self.loop.run(coroutine)

    async def open(self) -> Harness:
        dependencies = ops_dependencies(
            {
                "APPROVALS_DEMO_EFFECTS": str(self.effects),
                "OPS_API_TOKEN": OPS_TOKEN,
                "OPS_DEMO_LATENCY": str(TOOL_SECONDS),
            }
        )
        return await open_service(
            self.db_path,
            self.effects,
            dependencies=dependencies,
            clock=self.clock,
            policy=policy(),
            groups=FakeGroups(),
        )

    def teardown(self) -> None:
        self.run(close_harness(self.harness))
        self.loop.close()
        self.tmp.cleanup()

    async def settle(self, step: Any) -> None:
        """Do `step`; a refusal from our error tree is an answer, not a failure; then let
        the resumes it started finish."""
        with contextlib.suppress(ApprovalsError):
            await step
        await self.harness.service.drain()

    async def approvals(self) -> list[ApprovalRecord]:
        rows: list[ApprovalRecord] = await self.harness.store.list_approvals(limit=1000)
        return rows

    def pick_approval(self, data: st.DataObject, *, pending: bool) -> ApprovalRecord | None:
        rows = self.run(self.approvals())
        if pending:
            rows = [row for row in rows if row.status == "pending"]
        if not rows:
            return None
        chosen: ApprovalRecord = data.draw(st.sampled_from(rows), label="approval")
        return chosen

    # -- what people do ------------------------------------------------------------------

    @rule(task=st.sampled_from(TASKS), requester=st.sampled_from(REQUESTERS))
    def start(self, task: str, requester: str) -> None:
        run = self.run(
            self.harness.service.start_run(
                agent_name=None, task=task, requester=requester, channel="C-ops"
            )
        )
        self.runs.append(run.run_id)
        self.run(self.harness.service.drain())

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), approve=st.sampled_from([True, True, True, False]),
          decider=st.sampled_from(VOTERS), stale=st.sampled_from([False] * 5 + [True]))  # fmt: skip
    def vote(self, data: st.DataObject, approve: bool, decider: str, stale: bool) -> None:
        approval = self.pick_approval(data, pending=True)
        if approval is None:
            return
        digest = "0" * 64 if stale else approval.arguments_digest
        self.run(
            self.settle(
                self.harness.service.decide(
                    approval.approval_id, approve=approve, decider=decider, reason="r",
                    digest=digest,
                )
            )
        )  # fmt: skip

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def quorum(self, data: st.DataObject) -> None:
        """The eligible approvers other than the requester approve, one after another."""
        approval = self.pick_approval(data, pending=True)
        if approval is None:
            return
        for approver in (BOB, CAROL, ALICE):
            if approver != approval.requester:
                decided = self.harness.service.decide(
                    approval.approval_id, approve=True, decider=approver, reason="fine"
                )
                self.run(self.settle(decided))

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), decider=st.sampled_from(PEOPLE), version=st.sampled_from(["6.6.6", "x"]))
    def approve_with_changes(self, data: st.DataObject, decider: str, version: str) -> None:
        approval = self.pick_approval(data, pending=True)
        if approval is None or approval.tool_name != "deploy_release":
            return
        changed = self.harness.service.approve_with_changes(
            approval.approval_id, decider=decider, reason="safer", arguments={"version": version}
        )
        self.run(self.settle(changed))

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), actor=st.sampled_from(PEOPLE))
    def revoke(self, data: st.DataObject, actor: str) -> None:
        approval = self.pick_approval(data, pending=False)
        if approval is None:
            return
        revoked = self.harness.service.revoke(approval.approval_id, actor=actor, reason="stop")
        self.run(self.settle(revoked))

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), hold=st.booleans())
    def pause_or_let_go(self, data: st.DataObject, hold: bool) -> None:
        run_id = data.draw(st.sampled_from(self.runs), label="run")
        service = self.harness.service
        if hold:
            step = service.pause_run(run_id, actor=ADMIN, reason="looking")
        else:
            step = service.unpause_run(run_id, actor=ADMIN)
        self.run(self.settle(step))

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), verified=st.booleans())
    def reconcile(self, data: st.DataObject, verified: bool) -> None:
        """A person settles an uncertain call: they checked it ran, or abort it (never
        "run it again", which is a second effect by a person's explicit choice)."""
        run_id = data.draw(st.sampled_from(self.runs), label="run")
        resolution = VerifiedResult(result="checked: it ran") if verified else AbortCall()
        step = self.harness.service.reconcile(run_id, actor=ADMIN, resolution=resolution)
        self.run(self.settle(step))

    # -- time and the process ------------------------------------------------------------

    @rule(minutes=st.sampled_from([1, 1, 61, 121]))
    def time_passes(self, minutes: int) -> None:
        self.clock.advance(minutes=minutes)
        self.run(self.settle(self.harness.service.sweep()))

    @rule()
    def restart(self) -> None:
        """A clean stop and a new process on the same file."""
        self.run(self.reopen(self.harness))

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), decider=st.sampled_from((BOB, CAROL)),
          moment=st.sampled_from(["committed", "resuming", "mid_call"]))  # fmt: skip
    def crash(self, data: st.DataObject, decider: str, moment: str) -> None:
        """The process dies right after a vote is committed (nothing after it: no card,
        no resume), just after the resume started, or with a tool's effect applied and
        its result not recorded; then a new process on the same file recovers."""
        approval = self.pick_approval(data, pending=True)
        if approval is None:
            return
        self.run(self.vote_and_die(approval, decider, moment=moment))

    async def vote_and_die(self, approval: ApprovalRecord, decider: str, *, moment: str) -> None:
        service = self.harness.service
        try:
            recorded = await service.record_decision(
                approval.approval_id, approve=True, decider=decider, reason="ok"
            )
            if moment != "committed":
                await recorded.finish()
        except ApprovalsError:
            pass
        if moment == "mid_call":
            await self.until_an_effect_or_idle()
        await service.aclose(timeout=0)  # the process is gone: its resume is cut off
        await self.harness.store.close()
        self.harness.closed = True
        await self.reopen(self.harness)

    async def until_an_effect_or_idle(self) -> None:
        """Wait (with a deadline) until the downstream applied one more effect (the tool
        is in its latency: the result is not recorded yet) or the service is idle."""
        before = len(self.harness.effect_lines())
        idle = asyncio.create_task(self.harness.service.drain())
        try:
            async with asyncio.timeout(WAIT_SECONDS):
                while True:
                    if idle.done() or len(self.harness.effect_lines()) > before:
                        break
                    await asyncio.sleep(CRASH_POLL_SECONDS)  # a poll step, under the deadline
        finally:
            idle.cancel()
            await asyncio.gather(idle, return_exceptions=True)

    async def reopen(self, old: Harness) -> None:
        await close_harness(old)
        self.harness = await self.open()
        await self.harness.service.recover()
        await self.harness.service.drain()

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def every_effect_stands_on_a_sealed_quorum_of_its_digest(self) -> None:
        applied = [line for line in self.harness.effect_lines() if not line["duplicate"]]
        if not applied:
            return
        rows = self.run(self.approvals())
        for line in applied:
            deciding = [
                row for row in rows
                if row.execution_key == line["execution_key"] and row.status == "approved"
            ]  # fmt: skip
            assert deciding, f"an effect no approved call asked for: {line}"
            [approval] = deciding
            assert approval.arguments_digest == line["arguments_digest"], line
            evidence = self.run(self.harness.store.decision_evidence(approval.approval_id))
            assert evidence is not None
            quorum = sealed_quorum(evidence)
            assert quorum.problem is None, quorum.problem

    @invariant()
    def at_most_one_effect_per_execution_key(self) -> None:
        """A `safe` tool (set_config) may run again after a crash by its contract, with the
        same approved arguments; every other tool takes effect at most once per key."""
        lines = [line for line in self.harness.effect_lines() if not line["duplicate"]]
        once = Counter(line["execution_key"] for line in lines if line["tool"] not in RERUNNABLE)
        assert all(count == 1 for count in once.values()), once
        again = {(line["execution_key"], line["arguments_digest"]) for line in lines
                 if line["tool"] in RERUNNABLE}  # fmt: skip
        keys = [key for key, _ in again]
        assert len(keys) == len(set(keys)), f"a safe tool ran again with other arguments: {again}"

    @invariant()
    def audit_chain_verifies(self) -> None:
        verification = self.run(self.harness.store.verify_audit())
        assert verification.ok, verification


def test_the_service_keeps_its_invariants_whatever_people_and_crashes_do() -> None:
    run_state_machine_as_test(
        ServiceMachine,
        settings=settings(
            max_examples=20,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
