"""Recovery at start-up: finish what a dead process left behind.

Runs are found by status:

- `resuming`: a worker claimed the resume and died. The resume is run again from the
  stored state; the ledger decides per call: a recorded result is reused, a dispatch
  without a result follows the tool's replay policy (`safe` runs again, `idempotent`
  runs again with the same execution key, `manual` becomes an uncertain call that a
  human reconciles, and the notifier is told).
- `paused` with no open approval and no uncertain call: the process died after the last
  decision and before claiming the resume (a decision is committed before the person is
  told, and the card update and the resume follow it), or before the approval rows of a
  pause were written. The decided cards are shown again as they stand (an update that
  was lost with the process), then the resume is claimed (it re-requests any missing
  approval).
- `running`: the process died during a model turn. The model is not deterministic, so
  running the turn again could ask for other calls with other keys and repeat effects;
  the run is marked `failed` and its thread is told to start it again.

Recovery assumes this process is the installation's only worker (the single-process
SQLite mode). Its ledger owner id is stable per installation (see
`bot.service.config.installation_worker_id`), so the restarted process takes over the
leases of its dead predecessor at once instead of waiting for them to expire. Several
replicas on one database need a lease on runs too; that is not built yet.
"""

from __future__ import annotations

import logging

from bot.errors import ApprovalsError
from bot.service.api import ApprovalDecided
from bot.service.execution import fail_run
from bot.service.resume import current_rows, stalled_pause
from bot.service.workflow import APPROVALS_PER_RUN_LIMIT, Workflow
from store.records import TERMINAL_APPROVAL_STATUSES, RunRecord

log = logging.getLogger(__name__)

RUNS_PER_STATUS_LIMIT = 10_000
INTERRUPTED_RUN_MESSAGE = (
    "the bot restarted while this run was working; its last step did not finish. "
    "Start the task again."
)


async def recover_runs(flow: Workflow) -> int:
    """Act on every run a dead process left; returns how many runs were acted on.
    Resumes run in the service's tasks, so callers may `drain()` them."""
    acted = 0
    for run in await flow.store.list_runs(status="resuming", limit=RUNS_PER_STATUS_LIMIT):
        log.info("recovering run %s left resuming", run.run_id)
        flow.resume(run)
        acted += 1
    for run in await flow.store.list_runs(status="running", limit=RUNS_PER_STATUS_LIMIT):
        log.info("failing run %s left running", run.run_id)
        await fail_run(flow, run, INTERRUPTED_RUN_MESSAGE)
        acted += 1
    for run in await flow.store.list_runs(status="paused", limit=RUNS_PER_STATUS_LIMIT):
        try:
            stalled = await stalled_pause(flow, run)
        except ApprovalsError as error:
            log.warning("cannot inspect paused run %s (%s); leaving it", run.run_id, error)
            continue
        if stalled:
            await _show_decisions(flow, run)
        if stalled and await flow.claim_resume(run.run_id):
            log.info("resuming run %s left paused with every decision taken", run.run_id)
            acted += 1
    return acted


async def _show_decisions(flow: Workflow, run: RunRecord) -> None:
    """Update each decided card of the run in place (idempotent: it shows what is)."""
    rows = await flow.store.list_approvals(run_id=run.run_id, limit=APPROVALS_PER_RUN_LIMIT)
    for row in current_rows(rows).values():
        if row.status in TERMINAL_APPROVAL_STATUSES:
            await flow.notify(ApprovalDecided(run=run, approval=row))
