"""Reading a call whole before approving it: a value cut for length is never approved
unseen.

The review card shows the arguments within Block Kit's limits (`CARD_ARGUMENTS_LIMIT`
characters of the rendered snapshot, bot.review's renderer): a longer call is cut there,
with a marker, and so is the modal that repeats the card. Such a call (`card_shows_all`
false) counts a person's approval only once they have been shown the whole (redacted)
arguments of its current digest: the Slack layer shows them page by page, in the same
rendering as the card, and says so here when the person reached the last page
(`read_in_full`); the store keeps one row per (approval, reader, digest), audited
`read_in_full`. A vote to approve, and an approval with changes, by someone who has not
read the current digest whole is refused (`ArgumentsUnreadError`, audited `refused`,
why `unread`). Rejecting needs no reading: a rejected call never runs. A change of the
arguments makes a new digest, so everyone reads the new arguments again.

What a person is shown, and so whether a call must be read, comes from the snapshot the
store verified (store.seals.read_approval): one whose seal does not verify is never
shown, is never seen whole by anyone, and cannot be approved (`refuse_unsealed`,
audited `tamper_detected`).

A decision taken before a call was asked (a standing decision, a time window) approves
it only where `why_not_approved_ahead` says nothing stands in the way: a call its card
cuts is approved ahead only once the person whose decision it is has read it in full.
"""

from __future__ import annotations

import functools

from bot.errors import ArgumentsUnreadError, InputError, NotAuthorizedError, ResolutionError
from bot.review.snapshot import ReviewSnapshot
from bot.service.workflow import Workflow
from store.records import ApprovalRecord

CARD_ARGUMENTS_LIMIT = 2600
"""Characters of rendered arguments and script warnings a card (and the modal repeating
it) shows."""
WARNINGS_LIMIT = 300
"""Characters of mixed-script warnings a card shows under the arguments (taken from the
arguments' room)."""
WHOLE = 1 << 40
"""A render limit no snapshot reaches: the whole arguments."""
CUT_MARK = "… (truncated, "
"""How bot.review marks a cut (`… (truncated, N more characters)`)."""
REMEMBERED_SNAPSHOTS = 1024
REMEMBERED_SNAPSHOT_CHARS = 16_384


def whole_text(snapshot: ReviewSnapshot) -> str:
    """The whole rendered arguments, exactly as the card renders them, uncut."""
    return snapshot.render_text(limit=WHOLE)


def card_warnings(snapshot: ReviewSnapshot) -> str:
    """The script warnings as the card shows them ("" when there are none)."""
    return snapshot.render_warnings(limit=WARNINGS_LIMIT)


def card_arguments(snapshot: ReviewSnapshot, warnings: str) -> str:
    """The arguments as the card shows them: in what `warnings` leave of the room."""
    room = CARD_ARGUMENTS_LIMIT - (len(warnings) + 40 if warnings else 0)
    return snapshot.render_text(limit=room)


def card_rendering(snapshot_json: str) -> tuple[str, str] | None:
    """The script warnings and the arguments as the card shows them (`card_warnings`,
    `card_arguments`), None for a snapshot that cannot be read. The card's call block
    and `card_shows_all` both need this rendering of the same snapshot (the card when it
    is posted, the check at each approving vote): for snapshots up to
    REMEMBERED_SNAPSHOT_CHARS it is made once and remembered (REMEMBERED_SNAPSHOTS)."""
    if len(snapshot_json) <= REMEMBERED_SNAPSHOT_CHARS:
        return _remembered_rendering(snapshot_json)
    return _rendering(snapshot_json)


def _rendering(snapshot_json: str) -> tuple[str, str] | None:
    try:
        snapshot = ReviewSnapshot.from_json(snapshot_json)
    except InputError:
        return None
    warnings = card_warnings(snapshot)
    return warnings, card_arguments(snapshot, warnings)


_remembered_rendering = functools.lru_cache(maxsize=REMEMBERED_SNAPSHOTS)(_rendering)


def card_shows_all(snapshot_json: str) -> bool:
    """Does the card show every character of the call's (redacted) arguments? A
    snapshot that cannot be read shows as such, and there is nothing more to read.
    Lists ask this of every row they show, again and again: the answer for snapshots up
    to REMEMBERED_SNAPSHOT_CHARS is remembered (REMEMBERED_SNAPSHOTS of them)."""
    if len(snapshot_json) <= REMEMBERED_SNAPSHOT_CHARS:
        return _remembered_shows_all(snapshot_json)
    return _shows_all(snapshot_json)


def _shows_all(snapshot_json: str) -> bool:
    """A cut always leaves its marker, so a card text without one was not cut (the
    whole rendering, a walk over every character, is made only when it has one: cut, or
    a value that quotes the marker)."""
    rendered = card_rendering(snapshot_json)
    if rendered is None:
        return True
    _, shown = rendered
    if CUT_MARK not in shown:
        return True
    return shown == whole_text(ReviewSnapshot.from_json(snapshot_json))


_remembered_shows_all = functools.lru_cache(maxsize=REMEMBERED_SNAPSHOTS)(_shows_all)


async def has_read(flow: Workflow, approval: ApprovalRecord, user: str) -> bool:
    """Has `user` been shown the approval's current arguments whole?"""
    return await flow.store.has_read_in_full(
        approval.approval_id, reader=user, digest=approval.arguments_digest
    )


async def has_seen_all(flow: Workflow, approval: ApprovalRecord, user: str) -> bool:
    """Has `user` seen every character of the call's current arguments: on its card
    (they fit), or read in full? Only then does their approval count. Nobody has seen a
    call whose snapshot did not verify."""
    if approval.snapshot_seal != "valid":
        return False
    return card_shows_all(approval.snapshot) or await has_read(flow, approval, user)


async def why_not_approved_ahead(flow: Workflow, approval: ApprovalRecord, user: str) -> str | None:
    """Why a decision `user` took before this call was asked (a standing decision, a
    time window) may not approve it now; None: it may. The read-all rule holds for it as
    for a vote: a call its card cuts waits until `user` has read it in full, and a call
    whose snapshot did not verify is never approved."""
    if approval.snapshot_seal != "valid":
        return f"the seal of its snapshot is {approval.snapshot_seal}"
    if not await has_seen_all(flow, approval, user):
        return f"its card cuts its arguments and {user} has not read them in full"
    return None


async def refuse_unsealed(
    flow: Workflow, approval: ApprovalRecord, *, actor: str
) -> NotAuthorizedError:
    """A call whose snapshot did not verify: audited `tamper_detected` (and counted), and
    the error that refuses approving it (nobody may: nobody was shown it)."""
    flow.telemetry.decision_tampered(run_id=approval.run_id, approval_id=approval.approval_id)
    await flow.store.append_audit(
        "tamper_detected",
        actor=actor,
        run_id=approval.run_id,
        approval_id=approval.approval_id,
        detail={"purpose": "snapshot_seal", "approval_id": approval.approval_id,
                "why": f"the seal of its snapshot is {approval.snapshot_seal} "
                       "(what its approvers are shown was altered in the database)",
                "via": flow.via},
    )  # fmt: skip
    return NotAuthorizedError(
        f"the stored snapshot of approval {approval.approval_id} failed its seal (it was "
        "altered in the database): nobody can approve it; reject it and tell an operator"
    )


def unread(approval: ApprovalRecord) -> ArgumentsUnreadError:
    return ArgumentsUnreadError(
        "these arguments are too long for the card: read the whole arguments (Read all "
        "arguments) before you approve them",
        approval_id=approval.approval_id,
    )


async def record_read(flow: Workflow, approval: ApprovalRecord, user: str, digest: str) -> None:
    """Record that `user` was shown the whole arguments of `digest`; ResolutionError when
    that is no longer the approval's digest (they read arguments that changed since)."""
    if digest != approval.arguments_digest:
        raise ResolutionError(
            "the arguments changed while you read them (now digest "
            f"{approval.arguments_digest[:12]}…); read them again"
        )
    await flow.store.record_full_read(approval.approval_id, reader=user, digest=digest)
