"""What the seals of who else may decide mean (store.seals makes and checks them): a
stand-in deciding for someone away, an escalation step adding approvers when it is due,
an approval window approving matching calls for a while. Each function names the
fields its seal covers, from the values or from the stored row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store.rows import Row

if TYPE_CHECKING:  # store.seals imports this module
    from store.seals import SealValue


# -- who else may decide: stand-ins and escalation steps ----------------------------------

STAND_IN_PURPOSE = "stand_in"
ESCALATION_PURPOSE = "escalation"


def stand_in_fields(
    *, away_user: str, stand_in: str | None, created_at: str, until: str
) -> dict[str, SealValue]:
    """What an absence means: who is away, from when until when, and who decides in
    their place (times as stored). Ending it early is not sealed: it only takes away."""
    return {"away_user": away_user, "stand_in": stand_in, "created_at": created_at, "until": until}


def escalation_fields(
    *, approval_id: str, step: int, due_at: str, approvers: str
) -> dict[str, SealValue]:
    """What an escalation step means: from `due_at` on, these people (space separated
    ids) may decide this approval too."""
    return {"approval_id": approval_id, "step": step, "due_at": due_at, "approvers": approvers}


def stand_in_row_fields(row: Row) -> dict[str, SealValue]:
    return stand_in_fields(
        away_user=row["away_user"],
        stand_in=row["stand_in"],
        created_at=row["created_at"],
        until=row["until"],
    )


def escalation_row_fields(row: Row) -> dict[str, SealValue]:
    return escalation_fields(
        approval_id=row["approval_id"],
        step=int(row["step"]),
        due_at=row["due_at"],
        approvers=row["approvers"],
    )


# -- approval windows ----------------------------------------------------------------------

WINDOW_PURPOSE = "window"
WINDOW_MATCH_PURPOSE = "window_match"


def window_match_fields(*, tool_name: str, values: str) -> dict[str, SealValue]:
    """What a window's match digest is a MAC of: the tool and the canonical JSON of the
    matched argument values (never stored)."""
    return {"tool_name": tool_name, "values": values}


def window_fields(
    *,
    window_id: str,
    run_id: str,
    tool_name: str,
    match_fields: str,
    match_digest: str,
    decider: str,
    created_at: str,
    expires_at: str,
    lasts_seconds: int,
) -> dict[str, SealValue]:
    """What a window means: this person's approval of calls of this tool whose named
    fields have the values the digest binds, from `created_at` until `expires_at`, opened
    under a policy window of `lasts_seconds` (times as stored)."""
    return {
        "window_id": window_id,
        "run_id": run_id,
        "tool_name": tool_name,
        "match_fields": match_fields,
        "match_digest": match_digest,
        "decider": decider,
        "created_at": created_at,
        "expires_at": expires_at,
        "lasts_seconds": lasts_seconds,
    }


def window_row_fields(row: Row) -> dict[str, SealValue]:
    return window_fields(
        window_id=row["window_id"],
        run_id=row["run_id"],
        tool_name=row["tool_name"],
        match_fields=row["match_fields"],
        match_digest=row["match_digest"],
        decider=row["decider"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        lasts_seconds=int(row["lasts_seconds"]),
    )
