"""What the sealed data needs of the key ring, checked when a store opens."""

from __future__ import annotations

from bot.errors import ConfigError
from store.crypto import KeyRing, NoKeys
from store.keys import KEYS_ENV
from store.tx import Database

SEALED_TABLES = ("approvals", "approval_votes", "standing_decisions")  # sealed since 0010
SEALED_SINCE_MADE = ("stand_ins", "approval_escalations")  # made (0040) with seal columns


SEALED_KEY_IDS = (
    "SELECT key_id FROM run_blobs UNION SELECT result_key_id FROM ledger "
    "WHERE result_key_id IS NOT NULL"
    + "".join(
        f" UNION SELECT seal_key_id FROM {table} WHERE seal_key_id IS NOT NULL"
        for table in (*SEALED_TABLES, *SEALED_SINCE_MADE)
    )
    + " UNION SELECT snapshot_seal_key_id FROM approvals WHERE snapshot_seal_key_id IS NOT NULL"
)
"""The query of every key id the sealed data names (of a database at the latest schema)."""


async def sealed_key_ids(database: Database) -> set[str]:
    """The key ids of every sealed state blob, ledger result and decision seal in the
    database (a database from before migration 0010 has no decision seals)."""
    return {str(row[0]) for row in await database.read(SEALED_KEY_IDS)}


def uncovered(sealed: set[str], keyring: KeyRing, where: str) -> str | None:
    """Why `keyring` cannot open the data sealed with the key ids `sealed` (None: it can)."""
    missing = sorted(sealed - set(keyring.key_ids))
    if not missing:
        return None
    return (
        f"database {where} holds data sealed with key id(s) {', '.join(missing)}, which the "
        f"key ring lacks (it has {', '.join(keyring.key_ids)}); add them to {KEYS_ENV} "
        "or the key file (for a database made by `approvals-bot db copy`: the keys of the "
        "database it was copied from)"
    )


def settled_keyring(sealed: set[str], keyring: KeyRing, where: str, *, required: bool) -> KeyRing:
    """`keyring` when it opens all the sealed data; else a ConfigError saying which keys
    are missing, or (not `required`: a command that reads what is in clear) NoKeys
    saying it, so that only what needs those keys fails."""
    if isinstance(keyring, NoKeys):
        return keyring
    problem = uncovered(sealed, keyring, where)
    if problem is None:
        return keyring
    if required:
        raise ConfigError(problem)
    return NoKeys(problem)


async def check_keys_cover(database: Database, keyring: KeyRing, where: str) -> None:
    """ConfigError naming the key ids the data uses and the ring lacks."""
    settled_keyring(await sealed_key_ids(database), keyring, where, required=True)
