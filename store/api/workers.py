"""What the workers on one database share so that each thing is done once: run leases
(who works on a run, and taking over a dead worker's), the requests received recently,
and which run answers an MCP client's call.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from store.records import McpCallClaim, RunLease, RunRecord, RunStatus


class RunLeaseStore(Protocol):
    """Run leases: which worker works on a run, so that several workers on one database
    resume each run once, and take over the runs of a worker that died."""

    async def claim_run(
        self,
        run_id: str,
        *,
        expected_status: RunStatus,
        new_status: RunStatus,
        owner: str,
        lease_seconds: float,
        skip_locked: bool = False,
        unless_held: bool = False,
    ) -> RunLease | None:
        """Compare-and-set `expected_status` -> `new_status` (a working status) that gives
        `owner` the run's lease under a new token. From a working status it succeeds only
        when no other owner holds a live lease: the holder's lease ran out, or `owner`
        held it (a restarted worker), or the run has none (older data). None when lost
        (the run moved, or another worker holds it). InputError for a `new_status` that
        is not working or an unknown run. With `skip_locked` (the sweeps' takeovers), a
        run or lease that another transaction holds right now is not waited for: None,
        as when another worker holds the run (it is acting on it this very moment).
        With `unless_held`, a run an operator paused (`held_by` set) is not claimed:
        None, checked in the claim's own transaction, so a hold committed before the
        claim is never missed."""
        ...

    async def renew_run_lease(self, lease: RunLease, *, lease_seconds: float) -> RunLease:
        """Extend the lease from now, and the ledger leases of the run's executing calls
        that its owner holds, in one transaction. LeaseLostError when the token moved on
        (another worker took the run over, it was cancelled, or it stopped working)."""
        ...

    async def renew_run_leases(
        self, leases: Sequence[RunLease], *, lease_seconds: float
    ) -> list[RunLease]:
        """`renew_run_lease` for every lease at once: one conditional update over the
        (run, owner, token) of each, in one transaction with the ledger leases of their
        runs' executing calls. Returns the leases still held, renewed, in the order
        given; a lease whose token moved on is left out (it is lost) and nothing is
        written for it."""
        ...

    async def release_run_lease(self, lease: RunLease, *, new_status: RunStatus) -> RunRecord:
        """The holder moves the run to `new_status` (not a working one) and the lease
        ends. LeaseLostError when the token moved on: nothing changes."""
        ...

    async def run_lease(self, run_id: str) -> RunLease | None:
        """The run's current lease (live or run out), None when nobody holds it."""
        ...

    async def abandoned_runs(self, *, limit: int = 100) -> list[RunRecord]:
        """Working runs whose lease ran out (their worker died or hung), oldest first."""
        ...

    async def unresumed_runs(
        self, *, decided_before: datetime, limit: int = 100
    ) -> list[RunRecord]:
        """Paused runs with no pending approval, a decision (an approval decided, revoked
        or expired) taken after the run last moved, and none after `decided_before`: the
        worker that took the last decision died before it claimed the resume. Oldest
        first."""
        ...


class RequestMemoryStore(Protocol):
    """What was received recently, shared by every worker on the database."""

    async def remember_requests(self, requests: Sequence[tuple[str, float]]) -> list[bool]:
        """Remember each (key, ttl_seconds); for each, in order, True the first time (or
        once an earlier sighting's time ran out), False while it is remembered (a key
        twice in `requests`: its first time only). One write transaction for all, so of
        two workers receiving the same request exactly one sees True."""
        ...

    async def forget_expired_requests(self) -> int:
        """Drop the keys whose time ran out; returns how many."""
        ...


class McpCallStore(Protocol):
    """The MCP gateway's calls: which run answers a client's call, so that the same call
    retried (same client, tool and arguments: the same key) attaches to it on any worker."""

    async def claim_mcp_call(
        self, call_key: str, *, run_id: str, replacing: str | None = None
    ) -> McpCallClaim:
        """Map `call_key` to `run_id` when it is free, or when it maps to `replacing` (a
        run that no longer answers it); otherwise answer the run it maps to (`won`
        False). One write: of two workers claiming one key, one wins and the other is
        told the winner's run."""
        ...

    async def release_mcp_call(self, call_key: str, *, run_id: str) -> bool:
        """Forget the key while it still maps to `run_id` (its result was handed out);
        True when it did."""
        ...

    async def forget_mcp_calls(self, *, before: datetime) -> int:
        """Forget the keys claimed before that time whose run finished before it too, or
        never came to be; returns how many."""
        ...
