"""The journal the service hands to the runner: the store's ledger plus two duties.

1. The last check before an approved call runs. The runner claims an execution key
   right before it invokes a tool; for a call that was approved, this journal first
   re-reads the approval row and compares, in constant time, the call's keyed digest
   (which binds agent, tool, execution key and arguments) with the approved one, and
   the tool name with the approved tool. A call of another tool than the approved one,
   or whose digest moved, is not run and is audited `digest_mismatch`; a call whose
   approval is no longer `approved` (revoked since) or is past its `expires_at` (an
   approval granted in time but run later, after a resume delayed by recovery) is not
   run and is audited `execution_refused`. Either way the claim answers with a refusal
   result the model sees ("Not run: ..."), `on_refused` tells the people in the run's
   thread (the model may not mention it), and the ledger is left untouched. The same
   holds when `authorize` names a reason: the decision does not stand on votes whose
   seals verify (then also audited `tamper_detected`, naming the approval and why), or
   a counted voter is no longer eligible. A revocation may land between that check and the ledger
   claim, so the approval is read once more after a fresh claim (a revocation can no
   longer win then); refused there, the refusal is recorded as the call's result in
   the ledger.
2. The audit trail of effects: `executed` after a result is recorded (so the trail says
   which worker ran what, with which key and attempt) and `uncertain` when an
   interrupted call is parked for reconciliation. `on_executed` then hears of an
   approved call's result (an audit-only call's card is posted from there).
3. Voiding (bot.runtime.journal.VoidingJournal): an engine that finds, before it claims
   an approved call, that what was approved no longer holds voids the approval through
   `void` (the service's own void-and-ask-again: revoked, its card says why) and asks
   again; a call that already started cannot be voided (the store refuses).

Before either, a run cancelled while this execution went on (by an operator, perhaps
in another process) runs nothing more: every later claim answers "Not run: the run was
cancelled." without touching the ledger. A run paused meanwhile (held) is seen by
`pause_requested`, which the run core's Runner asks before each step: it stops there.
The Runner asks it right before it dispatches a call, so when the execution holds the
run's lease (`fenced`), the claim right after takes the run as that check just read it
rather than read it again: a cancellation committed after that read ends the run's
lease, and the ledger's claim, fenced by the lease's token, refuses (LeaseLostError,
the execution stops), as it does for one landing during the last check.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.canonical import digests_equal
from bot.clock import Clock, utc_now
from bot.runtime.journal import Claim, Fresh, Journal, Recorded
from bot.service.telemetry import CallIds, Telemetry
from store.api import Store
from store.records import ApprovalRecord, DecisionEvidence, RunRecord

CANCELLED_RESULT = "Not run: the run was cancelled."


@dataclass(frozen=True, kw_only=True)
class _Dispatch:
    tool_call_id: str
    tool_name: str
    attempt: int
    approval_id: str | None


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """Why an approved call must not run now, and the audit event that says so."""

    why: str
    kind: str = "execution_refused"  # or digest_mismatch: not the call that was approved
    tampered: bool = False  # the decision does not stand on sealed votes (bot.service.sealed)


def refusal(
    approval: ApprovalRecord | None, *, tool_name: str, arguments_digest: str, now: datetime
) -> Refusal | None:
    """Why an approved call must not run now, or None when it may."""
    if approval is None:
        return Refusal(why="its approval record is gone")
    if approval.tool_name != tool_name:
        return Refusal(
            why=f"it was approved for {approval.tool_name}, not {tool_name}",
            kind="digest_mismatch",
        )
    if approval.status != "approved":
        return Refusal(why=f"its approval is {approval.status}")
    if not digests_equal(approval.arguments_digest, arguments_digest):
        return Refusal(why="its arguments differ from the approved ones", kind="digest_mismatch")
    if approval.expires_at is not None and approval.expires_at <= now:
        expired = approval.expires_at.isoformat(timespec="seconds")
        return Refusal(why=f"its approval expired at {expired} before the call ran")
    return None


class ServiceJournal:
    """Wraps the store's ledger journal for one run execution (see the module doc)."""

    def __init__(
        self,
        inner: Journal,
        *,
        store: Store,
        run_id: str,
        actor: str,
        approvals: dict[str, ApprovalRecord],
        authorize: Callable[[DecisionEvidence], Awaitable[Refusal | None]] | None = None,
        on_refused: Callable[[ApprovalRecord, str], Awaitable[None]] | None = None,
        void: Callable[[ApprovalRecord, str], Awaitable[bool]] | None = None,
        on_executed: Callable[[ApprovalRecord, str, bool], Awaitable[None]] | None = None,
        clock: Clock = utc_now,
        telemetry: Telemetry | None = None,
        fenced: bool = False,
    ) -> None:
        self._inner = inner
        self._fenced = fenced  # `inner` claims under the run lease's token (module doc)
        self._checked_run: RunRecord | None = None  # as the pause check just read it
        self._telemetry = telemetry or Telemetry()
        self._store = store
        self._run_id = run_id
        self._actor = actor
        self._approvals = approvals  # approved calls of this execution, by execution key
        self._authorize = authorize
        self._on_refused = on_refused  # must not raise: the refusal stands either way
        self._void = void
        self._on_executed = on_executed  # an approved call ran: (approval, result, is_error)
        self._clock = clock
        self._dispatches: dict[str, _Dispatch] = {}

    async def pause_requested(self) -> bool:
        """Whether a person paused the run (in this process or another) since it started:
        the Runner stops before its next model turn or tool call."""
        run = await self._store.get_run(self._run_id)
        self._checked_run = run if self._fenced else None
        return run is not None and run.held

    async def _current_run(self) -> RunRecord | None:
        """The run for the cancel check: as the pause check right before read it (once;
        see the module doc), else read now."""
        checked, self._checked_run = self._checked_run, None
        if checked is not None:
            return checked
        return await self._store.get_run(self._run_id)

    async def void_approval(self, *, execution_key: str, why: str) -> bool:
        """Void the approval of this execution's call with that key (module doc)."""
        approved = self._approvals.get(execution_key)
        if approved is None or self._void is None:
            return False
        return await self._void(approved, why)

    async def claim(
        self,
        *,
        execution_key: str,
        arguments_digest: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        redispatch: bool = False,
    ) -> Claim:
        run = await self._current_run()
        if run is None or run.status == "cancelled":
            # Cancelled while this execution went on (in this process or another):
            # nothing more of the run runs; the ledger is left untouched.
            return Recorded(result=CANCELLED_RESULT, is_error=True)
        approved = self._approvals.get(execution_key)
        if approved is not None:
            current, refused = await self._last_check(approved, tool_name, arguments_digest)
            if refused is not None:
                await self._refused(approved, current, tool_name, tool_call_id, refused)
                return Recorded(result=f"Not run: {refused.why}.", is_error=True)
        claim = await self._inner.claim(
            execution_key=execution_key,
            arguments_digest=arguments_digest,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            redispatch=redispatch,
        )
        ids = CallIds(
            run_id=run_id,
            tool_call_id=tool_call_id,
            execution_key=execution_key,
            approval_id=approved.approval_id if approved else None,
        )
        if isinstance(claim, Recorded):
            self._telemetry.execution_reused(ids)
        if not isinstance(claim, Fresh):
            return claim
        if approved is not None:
            # A revocation could land between the check above and this claim; from now
            # on it cannot (Store.revoke refuses a call with a ledger row): look again.
            current = await self._store.get_approval(approved.approval_id)
            refused = self._check(current, tool_name, arguments_digest)
            if refused is not None:
                result = f"Not run: {refused.why}."
                await self._inner.record_result(
                    execution_key=execution_key,
                    lease_token=claim.lease_token,
                    result=result,
                    is_error=True,
                )
                await self._refused(approved, current, tool_name, tool_call_id, refused)
                return Recorded(result=result, is_error=True)
        self._dispatches[execution_key] = _Dispatch(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            attempt=claim.attempt,
            approval_id=approved.approval_id if approved else None,
        )
        self._telemetry.execution_claimed(ids, attempt=claim.attempt)
        return claim

    async def _last_check(
        self, approved: ApprovalRecord, tool_name: str, arguments_digest: str
    ) -> tuple[ApprovalRecord | None, Refusal | None]:
        """The approval as it stands now, and why the call must not run (None: it may).
        With `authorize`, in one read: the decision's evidence, whose row is checked
        first, then the seals and voters of that same read."""
        if self._authorize is None:
            current = await self._store.get_approval(approved.approval_id)
            return current, self._check(current, tool_name, arguments_digest)
        evidence = await self._store.decision_evidence(approved.approval_id)
        current = None if evidence is None else evidence.approval
        refused = self._check(current, tool_name, arguments_digest)
        if refused is None and evidence is not None:
            refused = await self._authorize(evidence)
        return current, refused

    def _check(
        self, current: ApprovalRecord | None, tool_name: str, arguments_digest: str
    ) -> Refusal | None:
        return refusal(
            current, tool_name=tool_name, arguments_digest=arguments_digest, now=self._clock()
        )

    async def _refused(
        self,
        approved: ApprovalRecord,
        current: ApprovalRecord | None,
        tool_name: str,
        tool_call_id: str,
        refused: Refusal,
    ) -> None:
        detail: dict[str, object] = {
            "tool": tool_name,
            "tool_call_id": tool_call_id,
            "why": refused.why,
        }
        if refused.kind == "digest_mismatch":
            detail["approved_tool"] = (current or approved).tool_name
            self._telemetry.digest_mismatch(
                run_id=self._run_id, approval_id=approved.approval_id, tool_call_id=tool_call_id
            )
        await self._audit(refused.kind, approved.approval_id, detail)
        if refused.tampered:
            self._telemetry.decision_tampered(
                run_id=self._run_id, approval_id=approved.approval_id, tool_call_id=tool_call_id
            )
            await self._audit("tamper_detected", approved.approval_id, {
                "purpose": "decision_seal", "approval_id": approved.approval_id,
                "why": refused.why})  # fmt: skip
        if self._on_refused is not None:
            await self._on_refused(current or approved, refused.why)

    async def record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None:
        await self._inner.record_result(
            execution_key=execution_key, lease_token=lease_token, result=result, is_error=is_error
        )
        dispatch = self._dispatches.pop(execution_key, None)
        if dispatch is not None:
            ids = CallIds(
                run_id=self._run_id,
                tool_call_id=dispatch.tool_call_id,
                execution_key=execution_key,
                approval_id=dispatch.approval_id,
            )
            self._telemetry.execution_recorded(ids, attempt=dispatch.attempt, is_error=is_error)
            await self._audit(
                "executed",
                dispatch.approval_id,
                {
                    "tool": dispatch.tool_name,
                    "tool_call_id": dispatch.tool_call_id,
                    "execution_key": execution_key,
                    "attempt": dispatch.attempt,
                    "is_error": is_error,
                },
            )
            approved = self._approvals.get(execution_key)
            if approved is not None and self._on_executed is not None:
                await self._on_executed(approved, result, is_error)

    async def mark_uncertain(self, *, execution_key: str) -> None:
        await self._inner.mark_uncertain(execution_key=execution_key)
        self._telemetry.execution_uncertain(run_id=self._run_id, execution_key=execution_key)
        await self._store.append_audit(
            "uncertain",
            actor=self._actor,
            run_id=self._run_id,
            detail={"execution_key": execution_key},
        )

    async def resolve_with_result(self, *, execution_key: str, result: str) -> None:
        await self._inner.resolve_with_result(execution_key=execution_key, result=result)

    async def _audit(self, kind: str, approval_id: str | None, detail: dict[str, object]) -> None:
        await self._store.append_audit(
            kind, actor=self._actor, run_id=self._run_id, approval_id=approval_id, detail=detail
        )
