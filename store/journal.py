"""StoreJournal: the runner's Journal protocol on top of the store's ledger.

The runner sees the plain Journal (bot/runtime/journal.py); this adapter adds the lease
owner and duration the durable ledger needs. Claims are fenced: a result recorded with a
lease token that was taken over raises LeaseLostError and writes nothing; with
`run_lease_token` (the run's lease, store.records.RunLease) a claim is refused the same way
once the run was taken over, so a worker that lost the run starts no tool call for it.
"""

from __future__ import annotations

from bot.runtime.journal import Claim, Journal
from store.api import Store


class StoreJournal:
    """A Journal whose claims are leases held by `owner` for `lease_seconds`."""

    def __init__(
        self,
        store: Store,
        *,
        owner: str,
        lease_seconds: float = 300.0,
        run_lease_token: int | None = None,
    ) -> None:
        self._store = store
        self._owner = owner
        self._lease_seconds = lease_seconds
        self._run_lease_token = run_lease_token

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
        return await self._store.ledger_claim(
            execution_key=execution_key,
            arguments_digest=arguments_digest,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            owner=self._owner,
            lease_seconds=self._lease_seconds,
            redispatch=redispatch,
            run_lease_token=self._run_lease_token,
        )

    async def record_result(
        self, *, execution_key: str, lease_token: int, result: str, is_error: bool
    ) -> None:
        await self._store.ledger_record_result(
            execution_key=execution_key, lease_token=lease_token, result=result, is_error=is_error
        )

    async def mark_uncertain(self, *, execution_key: str) -> None:
        await self._store.ledger_mark_uncertain(execution_key=execution_key, owner=self._owner)

    async def resolve_with_result(self, *, execution_key: str, result: str) -> None:
        await self._store.ledger_resolve_with_result(execution_key=execution_key, result=result)


def _satisfies_journal_protocol(journal: StoreJournal) -> Journal:
    """Never called: mypy checks here that StoreJournal implements the runner's Journal."""
    return journal
