"""The run leases this worker holds, and the heartbeat that keeps them alive.

A run being worked on (`running`, `resuming`) is leased in the store to one worker
(store.records.RunLease). Several workers on one database thus never work on the same run
at once, and when a worker dies (or hangs) its lease runs out and another takes the run
over (bot.service.recovery), under the tools' replay policies. Every claim goes through
`claim`, which records the lease here; from then on:

- one heartbeat task renews every held lease each third of `lease_seconds` (and with
  it the ledger leases of the run's executing calls), all in one store call, so a tool
  that runs for minutes keeps its run, and a worker holding many runs costs the
  database one transaction per beat, not one per run;
- the runner's ledger claims name the lease's fencing token (`token`), so a worker that
  lost the run (taken over, cancelled) starts no further tool call for it;
- a run leaves working by `leave_working` (a fenced release when we hold it) or by a
  save of a non-working status (its compare-and-set on the run's version, which every
  takeover moves), after which the lease is forgotten here (`drop`).

A lease the renewal no longer finds under its token (taken over, cancelled, released)
is forgotten: whatever this worker still does for the run is refused at its next write.
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import timedelta

from bot.errors import ApprovalsError, ConfigError, LeaseLostError
from bot.tasks import TaskOwner
from store.api import Store
from store.records import FIRST_LEASE_TOKEN, LeaseTerms, RunLease, RunRecord, RunStatus

log = logging.getLogger(__name__)

DEFAULT_LEASE_SECONDS = 15.0
"""How long a run stays with a worker that stopped renewing (died, hung): the time
another worker waits before it takes the run over."""
MIN_HEARTBEAT_SECONDS = 0.05  # a lease shorter than this (tests) is simply always run out


class HeldLeases:
    """This worker's run leases by run id, renewed by one heartbeat task its TaskOwner
    owns (started with the first lease, ended when none is left or at `aclose`)."""

    def __init__(self, store: Store, *, owner: str, lease_seconds: float) -> None:
        if not (lease_seconds > 0 and math.isfinite(lease_seconds)):
            raise ConfigError(f"the run lease must last a positive time, not {lease_seconds} s")
        self._store = store
        self.owner = owner
        self.lease_seconds = lease_seconds
        self._held: dict[str, RunLease] = {}
        self._tasks = TaskOwner(logger=log)
        self._heartbeat: asyncio.Task[None] | None = None

    @property
    def terms(self) -> LeaseTerms:
        return LeaseTerms(owner=self.owner, seconds=self.lease_seconds)

    def get(self, run_id: str) -> RunLease | None:
        return self._held.get(run_id)

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, lease: RunLease) -> None:
        """Keep `lease` alive from now until it is dropped."""
        self._held[lease.run_id] = lease
        if not self._tasks.closed and (self._heartbeat is None or self._heartbeat.done()):
            self._heartbeat = self._tasks.spawn(self._beat(), name="service:run-lease-heartbeat")

    def hold_new_run(self, run: RunRecord) -> RunLease:
        """The lease a run created with `terms` holds (store.records.FIRST_LEASE_TOKEN)."""
        lease = RunLease(
            run=run,
            owner=self.owner,
            token=FIRST_LEASE_TOKEN,
            expires_at=run.created_at + timedelta(seconds=self.lease_seconds),
        )
        self.hold(lease)
        return lease

    def drop(self, run_id: str, *, token: int | None = None) -> None:
        """Forget the run's lease (only if it is still the one under `token`, if given)."""
        held = self._held.get(run_id)
        if held is not None and (token is None or held.token == token):
            del self._held[run_id]

    async def renew_all(self) -> None:
        """Renew every held lease once (what each heartbeat does), in one store call; a
        lease it no longer finds under its token is lost and forgotten."""
        leases = list(self._held.values())
        if not leases:
            return
        try:
            renewed = await self._store.renew_run_leases(leases, lease_seconds=self.lease_seconds)
        except ApprovalsError as error:  # a database hiccup: the next beat tries again
            log.warning("cannot renew the leases on %d run(s): %s", len(leases), error)
            return
        still_held = {lease.run_id: lease for lease in renewed}
        for lease in leases:
            fresh = still_held.get(lease.run_id)
            if fresh is not None and fresh.token == lease.token:
                self._keep(lease, fresh)
            else:
                self._lose(lease)

    def _keep(self, lease: RunLease, renewed: RunLease) -> None:
        if self._held.get(lease.run_id) is lease:
            self._held[lease.run_id] = renewed

    def _lose(self, lease: RunLease) -> None:
        if self._held.get(lease.run_id) is lease:
            log.warning(
                "run %s is no longer ours: lease %d was taken over or ended",
                lease.run_id,
                lease.token,
            )
        self.drop(lease.run_id, token=lease.token)

    async def _beat(self) -> None:
        while self._held:
            await asyncio.sleep(max(self.lease_seconds / 3, MIN_HEARTBEAT_SECONDS))
            await self.renew_all()

    async def aclose(self) -> None:
        """Stop the heartbeat (the leases run out unless another worker of ours renews)."""
        self._heartbeat = None
        await self._tasks.aclose()


async def claim(
    store: Store,
    leases: HeldLeases,
    run_id: str,
    *,
    expected_status: RunStatus,
    new_status: RunStatus,
    skip_locked: bool = False,
    unless_held: bool = False,
) -> RunRecord | None:
    """Claim the run for this worker (store.api.RunLeaseStore.claim_run) and hold its
    lease; None when the run moved or another worker holds it (with `skip_locked`, also
    when another transaction is acting on it at this moment; with `unless_held`, also
    when an operator paused it)."""
    lease = await store.claim_run(
        run_id,
        expected_status=expected_status,
        new_status=new_status,
        owner=leases.owner,
        lease_seconds=leases.lease_seconds,
        skip_locked=skip_locked,
        unless_held=unless_held,
    )
    if lease is None:
        return None
    leases.hold(lease)
    return lease.run


async def leave_working(
    store: Store,
    leases: HeldLeases,
    run_id: str,
    *,
    new_status: RunStatus,
) -> RunRecord | None:
    """Move a run this worker works on (running or resuming) to `new_status`
    by a fenced release of the lease it holds. None, and nothing changed, when the run is
    not ours any more: the lease was lost (its token moved on: taken over, cancelled) or
    already forgotten because the heartbeat found it lost. A worker that lost its lease
    stops; it never changes the status the run's new holder gave it."""
    lease = leases.get(run_id)
    if lease is None:
        log.info("run %s is not held by %s: left as it is (not made %s)",
                 run_id, leases.owner, new_status)  # fmt: skip
        return None
    leases.drop(run_id, token=lease.token)
    try:
        released = await store.release_run_lease(lease, new_status=new_status)
    except LeaseLostError as error:
        log.info("run %s left to its new holder: %s", run_id, error)
        return None
    return released
