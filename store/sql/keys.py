"""What the sealed data needs of the key ring, checked when a store opens."""

from __future__ import annotations

from bot.errors import ConfigError
from store.crypto import KeyRing
from store.keys import KEYS_ENV
from store.tx import Database

SEALED_TABLES = ("approvals", "approval_votes", "standing_decisions")


async def sealed_key_ids(database: Database) -> set[str]:
    """The key ids of every sealed state blob, ledger result and decision seal in the
    database (a database from before migration 0010 has no decision seals)."""
    rows = await database.read(
        "SELECT key_id FROM run_blobs UNION SELECT result_key_id FROM ledger "
        "WHERE result_key_id IS NOT NULL"
        + "".join(
            f" UNION SELECT seal_key_id FROM {table} WHERE seal_key_id IS NOT NULL"
            for table in SEALED_TABLES
        )
    )
    return {str(row[0]) for row in rows}


async def check_keys_cover(database: Database, keyring: KeyRing, where: str) -> None:
    """ConfigError naming the key ids the data uses and the ring lacks."""
    missing = sorted(await sealed_key_ids(database) - set(keyring.key_ids))
    if missing:
        raise ConfigError(
            f"database {where} holds data sealed with key id(s) {', '.join(missing)}, which the "
            f"key ring lacks (it has {', '.join(keyring.key_ids)}); add them to {KEYS_ENV} "
            "or the key file"
        )
