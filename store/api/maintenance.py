"""What operators do to the store itself: schema migration (at open), key rotation, the
keys it lacks, readiness.
"""

from __future__ import annotations

from typing import Protocol

from store.records import MigrationReport, RotationReport, SchemaStatus


class MaintenanceStore(Protocol):
    """What operators do to the store itself: schema migration (at open), key rotation."""

    @property
    def migration_report(self) -> MigrationReport:
        """What opening the store migrated."""
        ...

    async def rotate_keys(
        self, *, actor: str = "operator", batch_size: int = 200
    ) -> RotationReport:
        """Re-encrypt every sealed blob with the newest key of the ring, in batches."""
        ...

    def missing_key_ids(self) -> dict[str, str]:
        """The key ids this process was asked to open sealed data with and its key ring
        lacks (each with the blob that named it first): work on that data waits for the
        key (KeyMissingError), and readiness says so until a restart with it."""
        ...

    async def schema_status(self) -> SchemaStatus:
        """The schema version the database records now (a query: it also proves the
        database answers) against the newest this build ships (readiness)."""
        ...

    async def close(self) -> None: ...
