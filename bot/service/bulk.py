"""Bulk decisions: one person approves or rejects several pending calls of one tool with
one reason, in one action (App Home's "Decide several at once").

Nothing here is a new way to decide. Each call is its own ballot through exactly the
path a single decision takes (bot.service.voting: `check_ballot` then the store's one
conditional `vote`): eligibility, channel scoping, the self-approval rule, the read-all
rule, the quorum, the digest the person was shown, the seal on each vote. Each is
committed and audited on its own (`voted`, `decided`, `refused` per call; the vote's
audit `via` is the surface with `-bulk`, so the log says one action decided it). A call
that fails a check is refused as it would be alone (audited `refused`) and reported; the
others go on. Calls of another tool than the one named are refused (`other_tool`):
one reason is given for one kind of call.

`record_bulk` ends with the commits, as `record_vote` does for one call, and answers a
`BulkRecorded` whose `finish()` does the rest for each decided or counted call (card,
resume). A store answer that refuses (closed meanwhile, expired, voted already, digest
changed) is settled at once, so the refusals are all known before the person is told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.errors import ApprovalsError, InputError
from bot.service.answers import DecisionResult, Recorded
from bot.service.authority import refuse
from bot.service.voting import Ballot, check_ballot, recorded_vote
from bot.service.workflow import Workflow

BULK_LIMIT = 30  # calls in one bulk decision (App Home offers at most this many per tool)
BULK_VIA_SUFFIX = "-bulk"


@dataclass(frozen=True, kw_only=True)
class BulkItem:
    """One selected call and the arguments digest the person was shown for it (the vote
    counts only for that digest)."""

    approval_id: str
    digest: str


@dataclass(frozen=True, kw_only=True)
class BulkRefusal:
    """A selected call that was not decided, and why (the error a single decision of
    it would have raised)."""

    approval_id: str
    error: ApprovalsError


@dataclass(frozen=True, kw_only=True)
class BulkResult:
    """What a bulk decision did: the votes counted (each closing its call, or counted
    toward its quorum) and the calls refused."""

    decided: tuple[DecisionResult, ...]
    refused: tuple[BulkRefusal, ...]


@dataclass(frozen=True, kw_only=True)
class BulkRecorded:
    """The committed votes and the refusals; `finish()` settles each committed vote
    (card, resume) and answers the `BulkResult`. Call it once, after telling the person."""

    recorded: tuple[Recorded[DecisionResult], ...]
    refused: tuple[BulkRefusal, ...]

    async def finish(self) -> BulkResult:
        decided: list[DecisionResult] = []
        refused = list(self.refused)
        for recorded in self.recorded:
            try:
                decided.append(await recorded.finish())
            except ApprovalsError as error:
                refused.append(BulkRefusal(approval_id=recorded.approval.approval_id, error=error))
        return BulkResult(decided=tuple(decided), refused=tuple(refused))


def check_items(items: Sequence[BulkItem], reason: str) -> None:
    """InputError, before anything is read or written, for a selection no bulk decision
    takes: none, more than BULK_LIMIT, a call twice, or no reason."""
    if not items:
        raise InputError("select at least one call to decide")
    if len(items) > BULK_LIMIT:
        raise InputError(f"at most {BULK_LIMIT} calls are decided at once, not {len(items)}")
    ids = [item.approval_id for item in items]
    if len(set(ids)) != len(ids):
        raise InputError("a call is selected twice; select each call once")
    if not reason.strip():
        raise InputError("a bulk decision needs a reason (it is recorded for every call)")


async def record_bulk(
    flow: Workflow,
    *,
    tool_name: str,
    items: Sequence[BulkItem],
    approve: bool,
    decider: str,
    reason: str,
    message: str | None = None,
) -> BulkRecorded:
    """Vote on each selected call of `tool_name` as `decider` with one reason (see the
    module doc); InputError for a selection `check_items` refuses, nothing changed."""
    check_items(items, reason)
    recorded: list[Recorded[DecisionResult]] = []
    refused: list[BulkRefusal] = []
    for item in items:
        ballot = Ballot(
            approval_id=item.approval_id,
            approve=approve,
            decider=decider,
            reason=reason,
            message=message,
            digest=item.digest,
            via=flow.via + BULK_VIA_SUFFIX,
        )
        try:
            one = await _record_one(flow, ballot, tool_name)
        except ApprovalsError as error:
            refused.append(BulkRefusal(approval_id=item.approval_id, error=error))
        else:
            recorded.append(one)
    return BulkRecorded(recorded=tuple(recorded), refused=tuple(refused))


async def _record_one(flow: Workflow, ballot: Ballot, tool_name: str) -> Recorded[DecisionResult]:
    """One call's vote, as a single decision records it; a store answer that refuses is
    settled here (audited, the card told), raising its refusal."""
    approval, run = await check_ballot(flow, ballot)
    if approval.tool_name != tool_name:
        await refuse(flow, approval, actor=ballot.decider, why="other_tool")
        raise InputError(
            f"{approval.approval_id} is a call of {approval.tool_name}, not of {tool_name}: "
            "decide it on its own"
        )
    one, counted = await recorded_vote(flow, ballot, approval, run)
    if not counted:
        await one.finish()  # raises the refusal the store's answer means (settle always does)
        raise InputError(f"{ballot.approval_id} was not decided")
    return one


class BulkDecisions:
    """The bulk deciding operations of `ApprovalService` (bound there as its own)."""

    def __init__(self, flow: Workflow) -> None:
        self._flow = flow

    async def record_decisions(
        self,
        *,
        tool_name: str,
        items: Sequence[BulkItem],
        approve: bool,
        decider: str,
        reason: str,
        message: str | None = None,
    ) -> BulkRecorded:
        """Approve or reject each selected call of `tool_name` as `decider`, with one
        reason (and on reject one message to the agent): each through the checks of
        `decide`, committed and audited on its own, bound to the digest in its item; a
        call that fails a check is refused as it would be alone and reported in
        `refused`, the others go on. Committed here; `finish()` settles each (card,
        resume). InputError, nothing changed, for no selection, more than BULK_LIMIT
        calls, a call twice or a blank reason."""
        return await record_bulk(
            self._flow,
            tool_name=tool_name,
            items=items,
            approve=approve,
            decider=decider,
            reason=reason,
            message=message,
        )

    async def decide_many(
        self,
        *,
        tool_name: str,
        items: Sequence[BulkItem],
        approve: bool,
        decider: str,
        reason: str,
        message: str | None = None,
    ) -> BulkResult:
        """`record_decisions`, then its `finish()`."""
        recorded = await self.record_decisions(
            tool_name=tool_name,
            items=items,
            approve=approve,
            decider=decider,
            reason=reason,
            message=message,
        )
        return await recorded.finish()
