"""The journal the service hands to the runner: the store's ledger plus two duties.

1. The last check before an approved call runs. The runner claims an execution key
   right before it invokes a tool; for a call that was approved, this journal first
   re-reads the approval row and recompares the argument digest the runner is about to
   execute with the approved one. A call whose approval is no longer `approved` (revoked
   or expired since) or whose arguments moved is not run: the claim answers with a
   refusal result the model sees, an `execution_refused` audit event is written,
   `on_refused` tells the people in the run's thread (the model may not mention it), and
   the ledger is left untouched. The same holds when `authorize` (the policy's check
   that every counted voter is still eligible) names a reason. A revocation may land
   between that check and the ledger claim, so the approval is read once more after a
   fresh claim (a revocation can no longer win then); refused there, the refusal is
   recorded as the call's result in the ledger.
2. The audit trail of effects: `executed` after a result is recorded (so the trail says
   which worker ran what, with which key and attempt) and `uncertain` when an
   interrupted call is parked for reconciliation.

Before either, a run cancelled while this execution went on (by an operator, perhaps
in another process) runs nothing more: every later claim answers "Not run: the run was
cancelled." without touching the ledger.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.runtime.journal import Claim, Fresh, Journal, Recorded
from store.api import ApprovalRecord, Store

CANCELLED_RESULT = "Not run: the run was cancelled."


@dataclass(frozen=True, kw_only=True)
class _Dispatch:
    tool_call_id: str
    tool_name: str
    attempt: int
    approval_id: str | None


def refusal_reason(approval: ApprovalRecord | None, arguments_digest: str) -> str | None:
    """Why an approved call must not run now, or None when it may."""
    if approval is None:
        return "its approval record is gone"
    if approval.status != "approved":
        return f"its approval is {approval.status}"
    if approval.arguments_digest != arguments_digest:
        return "its arguments differ from the approved ones"
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
        authorize: Callable[[ApprovalRecord], Awaitable[str | None]] | None = None,
        on_refused: Callable[[ApprovalRecord, str], Awaitable[None]] | None = None,
    ) -> None:
        self._inner = inner
        self._store = store
        self._run_id = run_id
        self._actor = actor
        self._approvals = approvals  # approved calls of this execution, by tool_call_id
        self._authorize = authorize
        self._on_refused = on_refused  # must not raise: the refusal stands either way
        self._dispatches: dict[str, _Dispatch] = {}

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
        run = await self._store.get_run(self._run_id)
        if run is None or run.status == "cancelled":
            # Cancelled while this execution went on (in this process or another):
            # nothing more of the run runs; the ledger is left untouched.
            return Recorded(result=CANCELLED_RESULT, is_error=True)
        approved = self._approvals.get(tool_call_id)
        if approved is not None:
            current = await self._store.get_approval(approved.approval_id)
            reason = refusal_reason(current, arguments_digest)
            if reason is None and current is not None and self._authorize is not None:
                reason = await self._authorize(current)
            if reason is not None:
                await self._refused(approved, current, tool_name, tool_call_id, reason)
                return Recorded(result=f"Not run: {reason}.", is_error=True)
        claim = await self._inner.claim(
            execution_key=execution_key,
            arguments_digest=arguments_digest,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            redispatch=redispatch,
        )
        if not isinstance(claim, Fresh):
            return claim
        if approved is not None:
            # A revocation could land between the check above and this claim; from now
            # on it cannot (Store.revoke refuses a call with a ledger row): look again.
            current = await self._store.get_approval(approved.approval_id)
            reason = refusal_reason(current, arguments_digest)
            if reason is not None:
                result = f"Not run: {reason}."
                await self._inner.record_result(
                    execution_key=execution_key,
                    lease_token=claim.lease_token,
                    result=result,
                    is_error=True,
                )
                await self._refused(approved, current, tool_name, tool_call_id, reason)
                return Recorded(result=result, is_error=True)
        self._dispatches[execution_key] = _Dispatch(
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            attempt=claim.attempt,
            approval_id=approved.approval_id if approved else None,
        )
        return claim

    async def _refused(
        self,
        approved: ApprovalRecord,
        current: ApprovalRecord | None,
        tool_name: str,
        tool_call_id: str,
        reason: str,
    ) -> None:
        await self._audit(
            "execution_refused",
            approved.approval_id,
            {"tool": tool_name, "tool_call_id": tool_call_id, "why": reason},
        )
        if self._on_refused is not None:
            await self._on_refused(current or approved, reason)

    async def record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None:
        await self._inner.record_result(
            execution_key=execution_key, lease_token=lease_token, result=result, is_error=is_error
        )
        dispatch = self._dispatches.pop(execution_key, None)
        if dispatch is not None:
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

    async def mark_uncertain(self, *, execution_key: str) -> None:
        await self._inner.mark_uncertain(execution_key=execution_key)
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
