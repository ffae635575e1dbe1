"""Store records the Slack rendering tests build their cards and modals from."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from bot.review.snapshot import review_snapshot
from store.records import ApprovalRecord

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def pending_approval(
    tool_name: str, arguments: dict[str, str], *, digest: str = "d" * 64, **fields: Any
) -> ApprovalRecord:
    """A pending approval of one call, its snapshot taken from `arguments`; `fields`
    override any other column."""
    snapshot = review_snapshot(tool_name, arguments, digest=digest)
    base = ApprovalRecord(
        approval_id="ap1",
        run_id="r1",
        tool_call_id="call_0_0",
        tool_name=tool_name,
        arguments_digest=snapshot.digest,
        snapshot=snapshot.to_json(),
        status="pending",
        requester="U0REQ",
        decider=None,
        reason=None,
        message=None,
        created_at=NOW,
        decided_at=None,
        expires_at=None,
        revoked_at=None,
        slack_channel="C1",
        slack_ts="2.0",
    )
    return replace(base, **fields)
