"""Schema versions: the numbered migrations each engine ships, one ledger for all.

Every engine has its own SQL under `store/migrations/<engine>/NNNN_name.sql`, and the
numbers and names are the same for every engine: migration 4 is the same change of the
schema in SQLite and in Postgres, so a database's version means the same whichever
engine holds it. An engine records each migration it applies in its `schema_migrations`
table (version, name, applied_at) in the same transaction as the migration itself, and
refuses a database recorded at a version newer than this build knows.
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


def bundled_migrations(engine: str) -> list[Migration]:
    """The engine's migrations shipped with this build, in order, numbered 1..N without
    gaps."""
    found: list[Migration] = []
    for entry in resources.files("store").joinpath("migrations", engine).iterdir():
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
    expected = list(range(1, len(found) + 1))
    if [migration.version for migration in found] != expected:
        raise MigrationError(f"bundled {engine} migrations are not numbered 1..N without gaps")
    return found


def refuse_newer(found: int, latest: int, *, database: str) -> None:
    """MigrationError when `database` is at a schema version this build does not know."""
    if found > latest:
        raise MigrationError(
            f"database {database} is at schema version {found}, newer than this "
            f"build supports ({latest}); upgrade approvals-bot or use another database"
        )
