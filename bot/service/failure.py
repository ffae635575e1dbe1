"""How a run's work ends when it went wrong: the run fails (fenced), waits for a
migration, or is let go because another worker holds it now.

Every status change here is fenced on what this worker held: a run it works on
(`running`, `resuming`) changes only through a release of its lease under that lease's
token (bot.service.leases.leave_working), any other run only from the version this
worker last knew. A worker whose lease moved on (a frozen replica woken after another
took the run over and parked it, a run cancelled under it) therefore changes nothing:
"lost" means "stop, it is not yours", never "fail".
"""

from __future__ import annotations

import logging

from bot.credentials import redact_text
from bot.service.events import RunFailed, RunNeedsMigration
from bot.service.leases import leave_working
from bot.service.workflow import Workflow
from store.records import FINISHED_RUN_STATUSES, WORKING_RUN_STATUSES, RunRecord

log = logging.getLogger(__name__)


async def let_go(flow: Workflow, run: RunRecord, why: str) -> RunRecord:
    """The run was taken from this worker (its lease moved on: taken over, cancelled):
    whatever this worker was doing for it is dropped, its status left to the new holder."""
    lease = flow.leases.get(run.run_id)
    if lease is not None:
        flow.leases.drop(run.run_id, token=lease.token)
    current = await flow.store.get_run(run.run_id) or run
    log.info("run %s is another worker's now (%s, %s); dropping this worker's outcome",
             run.run_id, current.status, why)  # fmt: skip
    return current


async def wait_for_migration(flow: Workflow, run: RunRecord, reason: str) -> RunRecord:
    """A claimed (`resuming`) run this deployment cannot resume goes back to `paused`
    with its decisions kept, marked with why; its thread is told once per reason."""
    reason = redact_text(reason)
    log.warning("run %s needs migration: %s", run.run_id, reason)
    paused = await leave_working(flow.store, flow.leases, run.run_id, new_status="paused")
    if paused is None:
        return await flow.store.get_run(run.run_id) or run
    marked = await flow.store.mark_needs_migration(run.run_id, reason=reason, actor=flow.actor)
    if marked is None:
        return await flow.store.get_run(run.run_id) or paused
    await flow.notify(RunNeedsMigration(run=marked, reason=reason))
    return marked


async def fail_run(flow: Workflow, run: RunRecord, message: str) -> RunRecord:
    """Mark the run failed and tell people why (`run`: this worker's latest record of it).
    The error is audited and told with its credentials redacted (an error from a client
    may quote the header it sent).

    Fenced: a run this worker works on fails only through a release of the lease it holds
    under that lease's token, any other run only from the very version this worker knew.
    A run that moved on meanwhile (taken over and parked by another worker, cancelled,
    finished) is not this worker's to fail: it is left as it is, quietly, and whatever
    this worker was doing for it is dropped."""
    message = redact_text(message)
    failed = await _mark_failed(flow, run)
    if failed is None:
        current = await flow.store.get_run(run.run_id) or run
        log.info("run %s moved on while this worker acted on it (now %s); not failing it "
                 "(%s)", run.run_id, current.status, message)  # fmt: skip
        return current
    flow.telemetry.run_ended(failed, status="failed")
    await flow.store.append_audit(
        "failed", actor=flow.actor, run_id=run.run_id, detail={"error": message}
    )
    await flow.notify(RunFailed(run=failed, error=message))
    return failed


async def _mark_failed(flow: Workflow, run: RunRecord) -> RunRecord | None:
    if run.status in WORKING_RUN_STATUSES:
        return await leave_working(flow.store, flow.leases, run.run_id, new_status="failed")
    if run.status in FINISHED_RUN_STATUSES:
        return None
    return await flow.store.transition_run(
        run.run_id, expected_status=run.status, new_status="failed", expected_version=run.version
    )
