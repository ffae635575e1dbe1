"""Approval windows: "approve calls of this tool whose arguments match, for the next 2 h".

Only where the policy allows it per tool (`allow_window`, optionally `window_match`, the
argument fields that must be equal; refused with `required_approvals` > 1: a window is
one person's). The person approves the call in front of them as any vote (same
eligibility, reason, reading, digest and expiry checks; audited); once that vote
approved it, the window opens (`window_opened`), sealed by the store over the tool, the
match fields and a keyed MAC of their values, the approver, its opening and expiry and
the policy's length.

A later call of the tool, in any run, is asked as every call is (its own approval row,
digest and card), and the service votes on it at once in the window's approver's name
(`via: window`) when all of these hold, checked again for every call:
- the window's seal verifies (one a database writer inserted, extended or copied covers
  nothing and is audited `tamper_detected`), it is neither revoked nor expired, and the
  policy still allows windows for the tool, with the same match fields, and at least as
  long (a shortened `allow_window` shortens the windows already open);
- the call's values of the match fields give the window's MAC (a call lacking one of
  them is not covered);
- the call needs one approval, its snapshot's seal verifies and its card shows its
  arguments whole, or the approver read them in full (`reading.why_not_approved_ahead`,
  the rule standing decisions follow): a call nobody read is never approved unread;
- the approver is eligible for that call now (its channel, the self-approval rule, the
  approvers list).
So each call it covers keeps the checks of an ordinary approval, including the last one
right before it runs. Its card says which window approved it, whose, and until when.

Revoking a window (App Home, or revoking the approval that opened it) stops it for
calls not yet asked; calls it already approved keep their own approval (revocable on
their cards until they run).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.canonical import canonical_arguments
from bot.errors import InputError, NotAuthorizedError
from bot.policy.eligibility import Eligible
from bot.policy.rules import ToolRule
from bot.service.api import WindowOffer
from bot.service.authority import eligibility
from bot.service.events import ApprovalDecided
from bot.service.reading import why_not_approved_ahead
from bot.service.workflow import Workflow
from store.records import ApprovalRecord, ApprovalWindow, RunRecord

log = logging.getLogger(__name__)

WINDOW_VIA = "window"


def window_offer(rule: ToolRule, approval: ApprovalRecord) -> WindowOffer | None:
    """The window an approval of this call may open (None: none may): as the policy
    allows it for the tool, on a call that needs one approval."""
    if rule.allow_window is None or rule.mode != "approve":
        return None
    if approval.required_approvals != 1 or rule.required_approvals != 1:
        return None
    return WindowOffer(lasts=rule.allow_window, match_fields=rule.window_match)


def why_not_covered(rule: ToolRule, approval: ApprovalRecord, window: ApprovalWindow,
                    at: datetime) -> str | None:  # fmt: skip
    """Why the window may not cover this call now, by the policy and the call alone
    (None: it may, if the values match and the approver is eligible)."""
    if window.seal != "valid":
        return f"its seal is {window.seal}"
    if not window.open_at(at) or window.tool_name != approval.tool_name:
        return "it is not open for this tool"
    offer = window_offer(rule, approval)
    if offer is None:
        return "the policy does not allow a window on this call (allow_window, one approval)"
    if offer.match_fields != window.match_fields:
        return "the policy's window_match changed since it opened"
    if window.created_at + offer.lasts <= at:
        return "the policy's allow_window is shorter now"
    return None


def match_values(arguments: Mapping[str, Any], fields: Sequence[str]) -> str | None:
    """The canonical JSON of the call's values of `fields` (None: it lacks one)."""
    if any(name not in arguments for name in fields):
        return None
    try:
        return canonical_arguments({name: arguments[name] for name in fields}).decode()
    except InputError:
        return None


async def open_window(
    flow: Workflow, approval: ApprovalRecord, arguments: Mapping[str, Any]
) -> ApprovalWindow:
    """Open the window the (approved) approval's tool allows, on these arguments."""
    offer = window_offer(flow.rule_for(approval.tool_name), approval)
    values = None if offer is None else match_values(arguments, offer.match_fields)
    if offer is None or values is None:
        raise NotAuthorizedError(
            f"the policy does not let an approval of {approval.tool_name} open a window"
        )
    return await flow.store.open_window(
        approval.approval_id,
        match_fields=offer.match_fields,
        match_values=values,
        lasts=offer.lasts,
        via=flow.via,
    )


def window_reason(window: ApprovalWindow) -> str:
    """The reason a vote made by a window records (its card shows it)."""
    why = f": {window.reason}" if window.reason else ""
    until = window.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    return f"approval window {window.window_id} of {window.decider}, open until {until}{why}"


async def apply_windows(
    flow: Workflow,
    run: RunRecord,
    records: Sequence[ApprovalRecord],
    arguments: Mapping[str, Mapping[str, Any]],
) -> bool:
    """Vote on the new pending `records` (their calls' `arguments` by execution key) that
    an open window covers; True when at least one was decided."""
    decided = False
    for asked in records:
        if flow.rule_for(asked.tool_name).allow_window is None:
            continue
        record = await flow.store.get_approval(asked.approval_id)  # a standing decision
        if record is None or record.status != "pending":  # of its run may have decided it
            continue
        for window in await _sealed_windows(flow, record.tool_name):
            if await _covers(flow, window, record, arguments.get(record.execution_key)):
                decided = await _vote(flow, run, record, window) or decided
                break
    return decided


async def _sealed_windows(flow: Workflow, tool_name: str) -> list[ApprovalWindow]:
    """The tool's open windows; one whose seal does not verify is audited and skipped."""
    sealed = []
    for window in await flow.store.open_windows(tool_name, at=flow.clock()):
        if window.seal == "valid":
            sealed.append(window)
            continue
        await flow.record_tampering(
            run_id=window.run_id, approval_id=window.window_id, purpose="window_seal",
            why=f"the approval window's seal is {window.seal}",
        )  # fmt: skip
    return sealed


async def _covers(
    flow: Workflow,
    window: ApprovalWindow,
    record: ApprovalRecord,
    arguments: Mapping[str, Any] | None,
) -> bool:
    why_not = why_not_covered(flow.rule_for(record.tool_name), record, window, flow.clock())
    values = None if arguments is None else match_values(arguments, window.match_fields)
    if why_not is None and values is None:
        why_not = "the call lacks a matched field"
    if (
        why_not is None
        and values is not None
        and not await flow.store.window_matches(window.window_id, match_values=values)
    ):
        why_not = "its matched arguments differ"
    if why_not is None:  # the read-all rule, as for a standing decision
        why_not = await why_not_approved_ahead(flow, record, window.decider)
    if why_not is None:
        verdict = await eligibility(flow, record, window.decider)
        if not isinstance(verdict, Eligible):
            why_not = f"{window.decider} may not decide it ({verdict.code})"
    if why_not is not None:
        log.info("approval window %s does not cover %s: %s",
                 window.window_id, record.approval_id, why_not)  # fmt: skip
    return why_not is None


async def _vote(
    flow: Workflow, run: RunRecord, record: ApprovalRecord, window: ApprovalWindow
) -> bool:
    outcome = await flow.store.vote(
        record.approval_id,
        decision="approved",
        voter=window.decider,
        digest=record.arguments_digest,
        reason=window_reason(window),
        now=flow.clock(),
        via=WINDOW_VIA,
    )
    if outcome.result != "decided":
        return False
    flow.telemetry.approval_closed(outcome.record)
    standing = await flow.standing(run.run_id)
    await flow.notify(
        ApprovalDecided(run=run, approval=outcome.record, standing=standing, window=window)
    )
    return True


# -- seeing and ending windows ---------------------------------------------------------------


def may_end(flow: Workflow, window: ApprovalWindow, user: str) -> bool:
    """Who opened the window and the policy's admins may end it."""
    return user == window.decider or flow.policy.is_admin(user)


async def windows_for(flow: Workflow, viewer: str, *, limit: int) -> list[ApprovalWindow]:
    """The open windows `viewer` may end (App Home lists them), soonest to end first."""
    found = await flow.store.all_open_windows(at=flow.clock(), limit=200)
    return [w for w in found if w.seal == "valid" and may_end(flow, w, viewer)][:limit]


async def end_window(flow: Workflow, window_id: str, *, actor: str, reason: str) -> ApprovalWindow:
    """End an open window: calls asked from now on are not covered by it. Refused
    (audited `refused`, NotAuthorizedError) unless `actor` opened it or is an admin;
    InputError for an unknown or already ended window. The card that opened it stops
    saying it is open."""
    if not reason.strip():
        raise InputError("say why you end the window")
    window = await flow.store.get_window(window_id)
    if window is None:
        raise InputError(f"there is no approval window {window_id!r}")
    if not may_end(flow, window, actor):
        await flow.store.append_audit(
            "refused", actor=actor, run_id=window.run_id, approval_id=window.window_id,
            detail={"why": "not_authorized", "action": "end_window", "via": flow.via},
        )  # fmt: skip
        raise NotAuthorizedError("only who opened the approval window or an admin may end it")
    ended = await flow.store.revoke_window(
        window_id, actor=actor, reason=reason.strip(), via=flow.via
    )
    if ended is None:
        raise InputError(f"the approval window {window_id} has already ended")
    approval, run = await flow.require_approval(window_id)
    standing = await flow.standing(run.run_id)
    await flow.notify(ApprovalDecided(run=run, approval=approval, standing=standing))
    return ended
