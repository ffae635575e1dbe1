"""SqlStore: every concept part of store.sql on one engine's database, joined into one
Store. An engine subclasses it with its own database, its rule for linking the audit
chain (store.sql.chain), where it is, and how it closes."""

from __future__ import annotations

from typing import Protocol

from bot.clock import Clock
from store.crypto import KeyRing, Sealer
from store.engine import EngineStore
from store.records import MigrationReport, SchemaStatus
from store.seals import DecisionSeals
from store.sql.approvals import Approvals
from store.sql.audit import Audit
from store.sql.leases import Leases, RequestMemory
from store.sql.ledger import Ledger
from store.sql.mcp_calls import McpCalls
from store.sql.rotation import KeyRotation
from store.sql.runs import Runs
from store.sql.seals import SEALS_MIGRATION, SealedDecisions, SealRotation
from store.sql.standing import Standing
from store.sql.votes import Votes
from store.tx import Engine


class ChainedEngine(Engine, Protocol):
    """An engine's database with its rule for linking queued audit events."""

    async def settle(self) -> None:
        """Link every audit event queued so far."""
        ...


class SqlStore(EngineStore):
    """The parts on `database`, sealing with `keyring`; `location` names the database in
    messages (a path, a URL without its password); `latest_schema` is the newest schema
    version the engine's build ships (readiness compares the database's with it)."""

    def __init__(
        self,
        database: ChainedEngine,
        keyring: KeyRing,
        clock: Clock,
        *,
        migration_report: MigrationReport,
        location: str,
        latest_schema: int,
    ) -> None:
        audit = Audit(database, clock, settle=database.settle)
        sealer = Sealer(keyring, audit)
        seals = DecisionSeals(keyring)
        sealed = SealedDecisions(database, seals, clock)
        super().__init__(
            runs=Runs(database, sealer, clock),
            leases=Leases(database, clock),
            requests=RequestMemory(database, clock),
            approvals=Approvals(database, clock, seals),
            votes=Votes(database, clock, seals),
            standing=Standing(database, clock, seals),
            audit=audit,
            ledger=Ledger(database, sealer, clock),
            sealed=sealed,
            mcp_calls=McpCalls(database, clock),
        )
        rotation = KeyRotation(database, sealer, audit, SealRotation(database, seals))
        self.rotate_keys = rotation.rotate_keys
        self._sealed = sealed
        self.keyring = keyring
        self.migration_report = migration_report
        self.location = location
        self._database = database
        self._latest_schema = latest_schema

    async def finish_opening(self) -> None:
        """After migrating at open: the one-time sealing of the rows of open calls, when
        this open applied migration 0010 to a database that existed (store.sql.seals)."""
        report = self.migration_report
        if report.before > 0 and SEALS_MIGRATION in report.applied:
            await self._sealed.seal_legacy_rows()

    async def schema_status(self) -> SchemaStatus:
        row = await self._database.read_one("SELECT MAX(version) FROM schema_migrations")
        found = 0 if row is None or row[0] is None else int(row[0])
        return SchemaStatus(found=found, latest=self._latest_schema)
