"""`--json` output of the CLI: records as JSON-ready dicts, printed one document a
command (pure; the commands choose what goes in)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from datetime import datetime
from typing import Any

from store.audit import event_to_json_line
from store.records import ApprovalRecord, AuditEvent


def jsonable(record: Any) -> dict[str, Any]:
    """A dataclass record's fields, times in ISO 8601."""
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in asdict(record).items()
    }


def approval_json(approval: ApprovalRecord) -> dict[str, Any]:
    """An approval, its review snapshot (redacted) as the JSON object it is."""
    data = jsonable(approval)
    with contextlib.suppress(json.JSONDecodeError):  # else shown as the stored text
        data["snapshot"] = json.loads(approval.snapshot)
    return data


def event_json(event: AuditEvent) -> dict[str, Any]:
    """An audit event as `audit export` writes it."""
    value: dict[str, Any] = json.loads(event_to_json_line(event))
    return value


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))
