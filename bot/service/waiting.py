"""How long an approval waited for people: from its request until its decision, expiry
or revocation, or until now while it is still pending.

One definition for every place that tells it: the telemetry's histograms
(bot.service.telemetry), the read model people are shown (`ApprovalView.waited_seconds`:
App Home, `approvals show`).
"""

from __future__ import annotations

from datetime import datetime

from store.records import ApprovalRecord


def closed_at(record: ApprovalRecord, now: datetime) -> datetime:
    """When the approval stopped waiting (`now` while it is pending)."""
    if record.status == "pending":
        return now
    if record.status == "revoked" and record.revoked_at is not None:
        return record.revoked_at
    if record.status == "expired" and record.expires_at is not None:
        return record.expires_at
    return record.decided_at or now


def waited_seconds(record: ApprovalRecord, now: datetime) -> float:
    """Seconds from the request to `closed_at` (never negative: clocks of replicas)."""
    return max(0.0, (closed_at(record, now) - record.created_at).total_seconds())


def elapsed_text(seconds: float) -> str:
    """A wait as people read it: "40 s", "12 min", "1 h 5 min", "2 d 3 h"."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if hours == 0:
        return f"{minutes} min"
    if days == 0:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours % 24
    return f"{days} d {rest} h" if rest else f"{days} d"
