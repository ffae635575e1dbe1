"""The journal: dispatch intent and raw results of tool calls, keyed by execution key.

The runner records intent before invoking a tool and the raw result after it. A recorded
result is reused, never re-executed. A dispatch with no result (the process died in
between) is `Interrupted`, and the runner applies the tool's replay policy.

`InMemoryJournal` ships here; the store's ledger is the durable implementation
(store/sql/ledger.py), with leases and fencing tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.errors import ExecutionKeyConflict, LeaseLostError, UnknownExecutionKey


@dataclass(frozen=True, kw_only=True)
class Fresh:
    """Intent recorded; the caller may invoke the tool, then record with `lease_token`."""

    lease_token: int
    attempt: int = 1


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """A result was already recorded for this key: reuse it, do not call the tool."""

    result: str
    is_error: bool


@dataclass(frozen=True, kw_only=True)
class Interrupted:
    """An earlier dispatch has no recorded result: the effect is uncertain."""

    attempt: int


@dataclass(frozen=True, kw_only=True)
class Uncertain:
    """The key was marked uncertain and waits for a human to reconcile it."""


Claim = Fresh | Recorded | Interrupted | Uncertain


class Journal(Protocol):
    async def claim(
        self,
        *,
        execution_key: str,
        arguments_digest: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        redispatch: bool = False,
    ) -> Claim:
        """Record dispatch intent for `execution_key`, or say why not.

        New key -> `Fresh`. Key with a recorded result -> `Recorded`. Key dispatched
        without a result -> `Interrupted`, unless `redispatch` is true (the replay policy
        or a human allowed running again), which re-dispatches -> `Fresh` with the next
        attempt. Key marked uncertain -> `Uncertain` unless `redispatch`.
        Same key with another digest -> ExecutionKeyConflict.
        A durable journal may raise LeaseHeldError while another live worker holds it.
        """
        ...

    async def record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None:
        """Store the raw result. A stale lease token -> LeaseLostError (nothing written)."""
        ...

    async def mark_uncertain(self, *, execution_key: str) -> None:
        """Mark an interrupted dispatch as waiting for reconciliation."""
        ...

    async def resolve_with_result(self, *, execution_key: str, result: str) -> None:
        """A human verified the outcome of an uncertain call: record it as its result."""
        ...


@runtime_checkable
class VoidingJournal(Protocol):
    """A journal that can also void an approval before its call runs (the service's):
    an engine that finds, right before an approved call, that what was approved no
    longer holds (the MCP gateway: the upstream changed the tool's definition) voids it
    and asks again, and the approval's card says it is void and why."""

    async def void_approval(self, *, execution_key: str, why: str) -> bool:
        """Void the approval of the call with this key, before any claim of it (its
        approval is revoked, the reason `voided: <why>`, its card updated). False when it
        cannot: no approval is known for the key, or its call already started (a claim
        of it exists): then claim the call as usual, which finds what happened."""
        ...


@dataclass(kw_only=True)
class _Entry:
    digest: str
    state: str  # executing | succeeded | failed | uncertain
    attempt: int
    lease_token: int
    result: str | None = None
    is_error: bool = False


class InMemoryJournal:
    """A journal for tests and the terminal demo without a database."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._tokens = 0

    def _next_token(self) -> int:
        self._tokens += 1
        return self._tokens

    async def claim(
        self,
        *,
        execution_key: str,
        arguments_digest: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        redispatch: bool = False,
    ) -> Claim:
        entry = self._entries.get(execution_key)
        if entry is None:
            token = self._next_token()
            self._entries[execution_key] = _Entry(
                digest=arguments_digest, state="executing", attempt=1, lease_token=token
            )
            return Fresh(lease_token=token, attempt=1)
        if entry.digest != arguments_digest:
            raise ExecutionKeyConflict(
                f"execution key {execution_key!r} is recorded with other arguments"
            )
        if entry.state in ("succeeded", "failed") and entry.result is not None:
            return Recorded(result=entry.result, is_error=entry.is_error)
        if not redispatch:
            if entry.state == "uncertain":
                return Uncertain()
            return Interrupted(attempt=entry.attempt)
        entry.state = "executing"
        entry.attempt += 1
        entry.lease_token = self._next_token()
        return Fresh(lease_token=entry.lease_token, attempt=entry.attempt)

    async def record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None:
        entry = self._entries.get(execution_key)
        if entry is None or entry.lease_token != lease_token:
            raise LeaseLostError(f"lease for {execution_key!r} is no longer ours")
        entry.state = "failed" if is_error else "succeeded"
        entry.result = result
        entry.is_error = is_error

    async def mark_uncertain(self, *, execution_key: str) -> None:
        entry = self._entries.get(execution_key)
        if entry is not None and entry.result is None:
            entry.state = "uncertain"

    async def resolve_with_result(self, *, execution_key: str, result: str) -> None:
        entry = self._entries.get(execution_key)
        if entry is None:
            raise UnknownExecutionKey(f"no journal entry for execution key {execution_key!r}")
        entry.state = "succeeded"
        entry.result = result
        entry.is_error = False
