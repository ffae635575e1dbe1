"""Recovery: finish what a dead worker left behind, at start-up and then all along.

At start-up (`recover_runs`) runs are found by status:

- `resuming`: a worker claimed the resume and died. Once nobody else holds the run's
  lease (bot.service.leases: its holder stopped renewing it, or it was this worker
  before a restart) the run is claimed and the resume is run again from the stored
  state; the ledger decides per call: a recorded result is reused, a dispatch
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
  once its lease is free the run is claimed, marked `failed` and its thread is told to
  start it again.

Then, on every sweeper pass (`take_over_abandoned`), the working runs whose lease ran
out (their worker died or hung while others live on) are taken over the same way,
without waiting for anyone to restart; so are the paused runs whose last decision was
taken more than a lease ago and still not acted on (the deciding worker died between
committing the decision and claiming the resume). A run held by a live worker is never
touched: every claim is a compare-and-set that refuses another owner's live lease, so of
several workers exactly one takes a run over. These claims skip a run another
transaction holds at that moment (another replica taking it over, its holder renewing)
instead of waiting for it: the next pass looks again. A pass takes at most
ABANDONED_PER_PASS runs of each kind, one transaction each; the rest wait for the next
pass (of this replica or another), which spreads a dead replica's runs over the live ones.

On SQLite (one process) the worker id is stable per installation (see
`bot.service.config.installation_worker_id`), so a restarted process takes over its dead
predecessor's leases at once instead of waiting for them to run out.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.errors import ApprovalsError
from bot.service.applying import current_rows
from bot.service.events import ApprovalDecided
from bot.service.failure import fail_run
from bot.service.leases import claim
from bot.service.resume import claim_resume, stalled_pause, start_resume
from bot.service.workflow import APPROVALS_PER_RUN_LIMIT, Workflow
from store.records import TERMINAL_APPROVAL_STATUSES, RunRecord

log = logging.getLogger(__name__)

RUNS_PER_STATUS_LIMIT = 10_000
ABANDONED_PER_PASS = 100
INTERRUPTED_RUN_MESSAGE = (
    "the bot restarted while this run was working; its last step did not finish. "
    "Start the task again."
)


async def recover_runs(flow: Workflow) -> int:
    """Act on every run a dead process left; returns how many runs were acted on.
    Resumes run in the service's tasks, so callers may `drain()` them."""
    acted = 0
    for status in ("resuming", "running"):
        for run in await flow.store.list_runs(status=status, limit=RUNS_PER_STATUS_LIMIT):
            acted += await _take_over(flow, run)
    for run in await flow.store.list_runs(status="paused", limit=RUNS_PER_STATUS_LIMIT):
        try:
            stalled = await stalled_pause(flow, run)
        except ApprovalsError as error:
            log.warning("cannot inspect paused run %s (%s); leaving it", run.run_id, error)
            continue
        if stalled:
            await _show_decisions(flow, run)
        if stalled and await claim_resume(flow, run.run_id):
            log.info("resuming run %s left paused with every decision taken", run.run_id)
            acted += 1
    return acted


async def take_over_abandoned(flow: Workflow) -> int:
    """Take over the working runs whose lease ran out, and resume the paused ones whose
    last decision nobody acted on (see the module doc); returns how many this worker
    took."""
    taken = 0
    for run in await flow.store.abandoned_runs(limit=ABANDONED_PER_PASS):
        if flow.leases.get(run.run_id) is None:
            taken += await _take_over(flow, run)
    settled = flow.clock() - timedelta(seconds=flow.lease_seconds)
    for run in await flow.store.unresumed_runs(decided_before=settled, limit=ABANDONED_PER_PASS):
        if await _resume_unclaimed(flow, run):
            taken += 1
    return taken


async def _resume_unclaimed(flow: Workflow, run: RunRecord) -> bool:
    """A paused run with every decision taken that nobody resumed (the worker that took
    the last one died before it claimed the resume): show its cards as they stand and
    claim it; False when it waits for a person after all (an uncertain call), or another
    worker claimed it first."""
    try:
        stalled = await stalled_pause(flow, run)
    except ApprovalsError:
        log.exception("cannot inspect paused run %s; leaving it", run.run_id)
        return False
    if not stalled:
        return False
    await _show_decisions(flow, run)
    if not await claim_resume(flow, run.run_id, skip_locked=True):
        return False
    log.info("resuming run %s: its last decision was not acted on", run.run_id)
    return True


async def _take_over(flow: Workflow, run: RunRecord) -> int:
    """Claim a working run left by a dead worker (1) or leave it to its live holder (0);
    a resume goes on here in a task, a model turn cut short fails."""
    claimed = await claim(
        flow.store,
        flow.leases,
        run.run_id,
        expected_status=run.status,
        new_status=run.status,
        skip_locked=True,
    )
    if claimed is None:
        return 0
    if claimed.status == "resuming":
        log.info("taking over run %s left resuming", run.run_id)
        start_resume(flow, claimed)
    else:
        log.info("failing run %s left running", run.run_id)
        await fail_run(flow, claimed, INTERRUPTED_RUN_MESSAGE)
    return 1


async def _show_decisions(flow: Workflow, run: RunRecord) -> None:
    """Update each decided card of the run in place (idempotent: it shows what is)."""
    rows = await flow.store.list_approvals(run_id=run.run_id, limit=APPROVALS_PER_RUN_LIMIT)
    for row in current_rows(rows).values():
        if row.status in TERMINAL_APPROVAL_STATUSES:
            await flow.notify(ApprovalDecided(run=run, approval=row))
