"""Rows read back as records: `row_to_approval` builds its record without the frozen
dataclass's __init__ (store.rows), so it must set every field to what __init__ would."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from store.records import ApprovalRecord
from store.rows import row_to_approval

ROW: dict[str, object] = {
    "approval_id": "a-1", "run_id": "r-1", "tool_call_id": "c-1", "tool_name": "deploy",
    "arguments_digest": "d" * 64, "snapshot": '{"x": 1}', "status": "approved",
    "requester": "U0", "decider": "U1", "reason": "ok", "message": None,
    "created_at": "2026-11-29T12:00:00.000000Z", "decided_at": "2026-11-29T12:01:00.500000Z",
    "expires_at": None, "revoked_at": None, "revoked_by": None, "slack_channel": "C1",
    "slack_ts": "1.2", "required_approvals": 2, "remind_at": "2026-11-29T12:05:00.000000Z",
    "reminded_at": None, "revoke_reason": None, "amended_by": None, "execution_key": "k-1",
    "policy_fingerprint": "fp", "snapshot_seal_key_id": "k", "snapshot_seal": "m",
}  # fmt: skip


def by_init(row: dict[str, object], **given: object) -> ApprovalRecord:
    at = {name: datetime.fromisoformat(str(row[name])) if row[name] else None
          for name in ("created_at", "decided_at", "expires_at", "revoked_at", "remind_at",
                       "reminded_at")}  # fmt: skip
    names = {field.name for field in dataclasses.fields(ApprovalRecord)}
    values = {name: row[name] for name in names - {"snapshot_seal"} if name in row}
    return ApprovalRecord(**{**values, **at, **given})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "given", [{}, {"snapshot": "[shown instead]", "snapshot_seal": "mismatch"}]
)
def test_row_to_approval_sets_every_field_as_init_would(given: dict[str, object]) -> None:
    record = row_to_approval(ROW, **given)  # type: ignore[arg-type]
    assert record == by_init(ROW, **given)
    assert set(vars(record)) == {field.name for field in dataclasses.fields(ApprovalRecord)}
    assert record.created_at == datetime(2026, 11, 29, 12, tzinfo=UTC)
    assert dataclasses.replace(record, reason="x") == by_init(ROW, **given, reason="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.status = "pending"  # type: ignore[misc]
