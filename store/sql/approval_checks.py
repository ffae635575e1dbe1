"""What approvals refuse by name before anything is written: a new approval's empty or
reserved fields, an unknown status or verdict, a decision or revocation without a
person, a page or sweep batch out of range (store.sql.approvals, votes and lists)."""

from __future__ import annotations

from typing import get_args

from bot.errors import InputError
from store.records import LEGACY_KEY_PREFIX, ApprovalStatus, NewApproval, Verdict
from store.rows import to_db

APPROVAL_STATUSES: frozenset[str] = frozenset(get_args(ApprovalStatus))
VERDICTS: frozenset[str] = frozenset(get_args(Verdict))
MAX_PAGE = 500


def check_new(new: NewApproval) -> None:
    for name in ("approval_id", "run_id", "tool_call_id", "tool_name", "arguments_digest"):
        if not getattr(new, name):
            raise InputError(f"new approval has an empty {name}")
    if new.required_approvals < 1:
        raise InputError("new approval needs required_approvals >= 1")
    if new.execution_key is not None and (
        not new.execution_key or new.execution_key.startswith(LEGACY_KEY_PREFIX)
    ):
        raise InputError(
            f"new approval's execution key {new.execution_key!r} is empty or reserved "
            f"(the {LEGACY_KEY_PREFIX!r} prefix marks approvals from before keys were stored)"
        )
    for moment in (new.expires_at, new.remind_at):
        if moment is not None:
            to_db(moment)  # refuses a naive time before anything is written


def check_status(status: str | None) -> None:
    if status is not None and status not in APPROVAL_STATUSES:
        raise InputError(f"approval status {status!r} is not one of {sorted(APPROVAL_STATUSES)}")


def check_decision(decision: str, *, decider: str) -> None:
    check_verdict(decision)
    if not decider:
        raise InputError("a decision needs a decider")


def check_revocation(*, actor: str) -> None:
    if not actor:
        raise InputError("a revocation needs an actor")


def check_verdict(decision: str) -> None:
    if decision not in VERDICTS:
        raise InputError(f"decision {decision!r} is not one of {sorted(VERDICTS)}")


def check_page(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise InputError(f"a page holds 1 to {MAX_PAGE} approvals, not {limit}")


def check_batch(batch: int) -> None:
    """A sweep's batch: how many approvals one of its transactions claims at most."""
    if not 1 <= batch <= MAX_PAGE:
        raise InputError(f"a sweep's batch holds 1 to {MAX_PAGE} approvals, not {batch}")
