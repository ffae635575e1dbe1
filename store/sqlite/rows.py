"""Column lists and row -> record conversion for the store's tables."""

from __future__ import annotations

import sqlite3
from typing import cast

from store.api import ApprovalRecord, ApprovalStatus, RunRecord, RunStatus
from store.sqlite.timefmt import from_db, from_db_optional

RUN_COLUMNS = (
    "run_id, agent_name, agent_version, schema_version, status, version, key_id, "
    "blob_digest, channel, thread_ts, requester, created_at, updated_at"
)
APPROVAL_COLUMNS = (
    "approval_id, run_id, tool_call_id, tool_name, arguments_digest, snapshot, status, "
    "requester, decider, reason, message, created_at, decided_at, expires_at, revoked_at, "
    "revoked_by, slack_channel, slack_ts, required_approvals, remind_at, reminded_at, "
    "revoke_reason, amended_by"
)


def row_to_run(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"],
        agent_name=row["agent_name"],
        agent_version=row["agent_version"],
        schema_version=row["schema_version"],
        status=cast(RunStatus, row["status"]),
        version=int(row["version"]),
        key_id=row["key_id"],
        blob_digest=row["blob_digest"],
        channel=row["channel"],
        thread_ts=row["thread_ts"],
        requester=row["requester"],
        created_at=from_db(row["created_at"]),
        updated_at=from_db(row["updated_at"]),
    )


def row_to_approval(row: sqlite3.Row) -> ApprovalRecord:
    return ApprovalRecord(
        approval_id=row["approval_id"],
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        arguments_digest=row["arguments_digest"],
        snapshot=row["snapshot"],
        status=cast(ApprovalStatus, row["status"]),
        requester=row["requester"],
        decider=row["decider"],
        reason=row["reason"],
        message=row["message"],
        created_at=from_db(row["created_at"]),
        decided_at=from_db_optional(row["decided_at"]),
        expires_at=from_db_optional(row["expires_at"]),
        revoked_at=from_db_optional(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        slack_channel=row["slack_channel"],
        slack_ts=row["slack_ts"],
        required_approvals=int(row["required_approvals"]),
        remind_at=from_db_optional(row["remind_at"]),
        reminded_at=from_db_optional(row["reminded_at"]),
        revoke_reason=row["revoke_reason"],
        amended_by=row["amended_by"],
    )
