"""What the sealed data needs of the key ring: checked when a store opens for what the
runs not finished need (a key id only other rows name does not stop a process: it is
reported, as tampering, by `audit verify` and `doctor`)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.errors import ConfigError
from store.crypto import KeyRing, NoKeys
from store.keys import KEYS_ENV
from store.records import FINISHED_RUN_STATUSES
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


_OPEN = "r.status NOT IN ({})".format(
    ", ".join(f"'{status}'" for status in sorted(FINISHED_RUN_STATUSES))
)
KEY_USES = (
    ("run-state", "b.key_id", "run_blobs b", "b.run_id"),
    ("ledger result", "l.result_key_id", "ledger l", "l.run_id"),
    ("request seal", "a.seal_key_id", "approvals a", "a.run_id"),
    ("snapshot seal", "sa.snapshot_seal_key_id", "approvals sa", "sa.run_id"),
    (
        "vote seal",
        "v.seal_key_id",
        "approval_votes v JOIN approvals va ON va.approval_id = v.approval_id",
        "va.run_id",
    ),
    ("standing decision seal", "s.seal_key_id", "standing_decisions s", "s.run_id"),
    (
        "escalation seal",
        "e.seal_key_id",
        "approval_escalations e JOIN approvals ea ON ea.approval_id = e.approval_id",
        "ea.run_id",
    ),
)
"""Where sealed data names a key id: (what, key id column, table, run id column); the
stand-ins' seals, which belong to no run, are not among them."""

NEEDED_KEY_IDS = " UNION ".join(
    f"SELECT {column} FROM {table} JOIN runs r ON r.run_id = {run} "
    f"WHERE {column} IS NOT NULL AND {_OPEN}"
    for _, column, table, run in KEY_USES
)
"""The key ids the data of runs not finished names: what a process needs to work on them
(checked at start-up; a key id only finished runs' rows name is not needed to serve)."""


@dataclass(frozen=True, kw_only=True)
class KeyUse:
    """A row whose sealed data names a key id no ring at hand has."""

    key_id: str
    what: str  # run-state, ledger result, request seal, ...
    run_id: str | None
    run_status: str | None

    def __str__(self) -> str:
        run = f" of run {self.run_id} ({self.run_status})" if self.run_id else ""
        return f"{self.what}{run} names key id {self.key_id!r}"


async def needed_key_ids(database: Database) -> set[str]:
    """The key ids the data of the runs not finished names (NEEDED_KEY_IDS)."""
    return {str(row[0]) for row in await database.read(NEEDED_KEY_IDS)}


async def unknown_key_uses(database: Database, keyring: KeyRing) -> list[KeyUse]:
    """Every row whose sealed data names a key id `keyring` lacks (stand-ins' seals too).
    A process that must read one waits for the key (KeyMissingError); one nothing open
    needs was planted, or its key dropped before rotation reached it: tampering, for
    `audit verify` and `doctor` to report."""
    known = tuple(keyring.key_ids) or ("",)
    marks = ", ".join("?" for _ in known)
    uses = [
        f"SELECT '{what}' AS what, {column} AS key_id, {run} AS run_id, r.status AS status "
        f"FROM {table} LEFT JOIN runs r ON r.run_id = {run} "
        f"WHERE {column} IS NOT NULL AND {column} NOT IN ({marks})"
        for what, column, table, run in KEY_USES
    ]
    uses.append(
        "SELECT 'stand-in seal' AS what, seal_key_id AS key_id, NULL AS run_id, NULL AS status "
        f"FROM stand_ins WHERE seal_key_id IS NOT NULL AND seal_key_id NOT IN ({marks})"
    )
    rows = await database.read(
        " UNION ALL ".join(uses) + " ORDER BY key_id, what, run_id",
        known * len(uses),
    )
    return [
        KeyUse(
            key_id=row["key_id"], what=row["what"], run_id=row["run_id"], run_status=row["status"]
        )
        for row in rows
    ]


async def sealed_key_ids(database: Database) -> set[str]:
    """The key ids of every sealed state blob, ledger result and decision seal in the
    database (a database from before migration 0010 has no decision seals)."""
    return {str(row[0]) for row in await database.read(SEALED_KEY_IDS)}


def uncovered(sealed: set[str], keyring: KeyRing, where: str) -> str | None:
    """Why `keyring` cannot open the data of open runs sealed with the key ids `sealed`
    (None: it can)."""
    missing = sorted(sealed - set(keyring.key_ids))
    if not missing:
        return None
    return (
        f"database {where} holds data of runs not finished sealed with key id(s) "
        f"{', '.join(missing)}, which the "
        f"key ring lacks (it has {', '.join(keyring.key_ids)}); add them to {KEYS_ENV} "
        "or the key file (for a database made by `approvals-bot db copy`: the keys of the "
        "database it was copied from)"
    )


def settled_keyring(sealed: set[str], keyring: KeyRing, where: str, *, required: bool) -> KeyRing:
    """`keyring` when it opens all the data the runs not finished need (`sealed`: its key
    ids, NEEDED_KEY_IDS); else a ConfigError saying which keys
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
