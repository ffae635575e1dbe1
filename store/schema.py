"""Schema versions: the numbered migrations each backend ships, one ledger for all.

Every backend has its own SQL under `store/migrations/<backend>/NNNN_name.sql`, and the
numbers and names are the same for every backend: migration 4 is the same change of the
schema in SQLite and in Postgres, so a database's version means the same whichever
backend holds it. A backend records each migration it applies in its `schema_migrations`
table (version, name, applied_at) in the same transaction as the migration itself, and
refuses a database recorded at a version newer than this build knows.

Numbers need not be contiguous: a number may be reserved by a change still under way
on another branch. A backend applies every bundled migration its ledger lacks, in
number order (not only those above the highest recorded), so a migration merged later
under a lower number is still applied; each migration is therefore self-contained.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from bot.errors import MigrationError

MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, kw_only=True)
class Migration:
    version: int
    name: str  # "0001_initial": the file name without .sql, as recorded in the ledger
    sql: str


def bundled_migrations(backend: str) -> list[Migration]:
    """The backend's migrations shipped with this build, in order, each number once."""
    found: list[Migration] = []
    for entry in resources.files("store").joinpath("migrations", backend).iterdir():
        match = MIGRATION_NAME.match(entry.name)
        if match:
            found.append(
                Migration(
                    version=int(match.group(1)),
                    name=entry.name.removesuffix(".sql"),
                    sql=entry.read_text(encoding="utf-8"),
                )
            )
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions) or (versions and versions[0] != 1):
        raise MigrationError(f"bundled {backend} migrations start at 1 and use each number once")
    return found


def latest_version(backend: str) -> int:
    """The newest schema version the backend's build ships."""
    migrations = bundled_migrations(backend)
    return migrations[-1].version if migrations else 0


def refuse_newer(found: int, latest: int, *, database: str) -> None:
    """MigrationError when `database` is at a schema version this build does not know."""
    if found > latest:
        raise MigrationError(
            f"database {database} is at schema version {found}, newer than this "
            f"build supports ({latest}); upgrade approvals-bot or use another database"
        )
