"""What the probes ask the service: whether it can serve, and how old the oldest wait is.

`readiness` answers `/readyz` (the database answers and records this build's schema
version; no stored data this process needed named a key its ring lacks);
`observe_pending` reads the oldest pending approval of the service's surface into the
telemetry's gauge when metrics are scraped (bot.service.telemetry).
"""

from __future__ import annotations

from bot.errors import StoreError
from bot.service.workflow import Workflow


async def readiness(flow: Workflow) -> str | None:
    """Why the service cannot serve now (None: it can)."""
    try:
        schema = await flow.store.schema_status()
    except StoreError as error:
        return f"database does not answer: {error}"
    if not schema.current:
        return f"database schema is at version {schema.found}; this build expects {schema.latest}"
    missing = flow.store.missing_key_ids()
    if missing:
        named = ", ".join(f"{key_id} ({where})" for key_id, where in sorted(missing.items()))
        return (
            f"the key ring lacks key id(s) {named}: the runs sealed with them wait; add the "
            "key(s) to APPROVALS_KEYS or the key file and restart"
        )
    return None


async def observe_pending(flow: Workflow) -> None:
    """Set the oldest-pending gauge from one indexed row."""
    oldest = await flow.store.pending_page(limit=1, origin=flow.origin)
    flow.telemetry.oldest_pending(oldest[0].created_at if oldest else None)
