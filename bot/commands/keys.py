"""`approvals-bot keys`: the keys that encrypt stored run states.

    approvals-bot keys generate [--print]   add a new newest key (key file), or print one
    approvals-bot keys rotate                re-encrypt every blob with the newest key

A tampered blob found by rotation is left as it is (audited) and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import Any

from bot.commands.database import (
    command_group,
    database_url,
    db_command,
    existing_store,
    positive_int,
)
from bot.errors import ConfigError
from store.config import SqliteLocation, parse_database_url
from store.keys import (
    KEYS_ENV,
    create_key_file,
    format_key,
    generate_key,
    key_file_for,
    prepend_key_to_file,
)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `keys generate` and `keys rotate`."""
    group = command_group(subparsers, "keys", "manage the keys that encrypt stored run states")
    generate = db_command(
        group,
        "generate",
        "create a new key: added as the newest key of the key file beside the database, "
        f"or printed as kid:base64key for {KEYS_ENV} (--print, or when {KEYS_ENV} is set)",
        keys_generate,
    )
    generate.add_argument("--print", action="store_true", help="print the key, change no file")
    generate.add_argument("--id", dest="key_id", default=None, help="key id (default: dated)")
    rotate = db_command(
        group,
        "rotate",
        "re-encrypt every stored blob with the newest key (resumable; reports counts)",
        keys_rotate,
    )
    rotate.add_argument("--batch-size", type=positive_int, default=200, help="rows per commit")


def keys_generate(args: argparse.Namespace) -> int:
    key = generate_key(args.key_id)
    location = parse_database_url(database_url(args))
    if (
        args.print
        or os.environ.get(KEYS_ENV, "").strip()
        or not isinstance(location, SqliteLocation)
    ):  # a Postgres database has no key file beside it
        print(format_key(key))
        print(
            f"put this entry first in {KEYS_ENV} (keep the old keys after it), restart, "
            "then run: approvals-bot keys rotate",
            file=sys.stderr,
        )
        return 0
    database = location.path
    key_file = key_file_for(database)
    if key_file.exists():
        ring = prepend_key_to_file(key_file, key)
        print(f"added key {key.key_id} to {key_file} as the newest of {len(ring.key_ids)} keys")
        print("existing data stays under its old key until: approvals-bot keys rotate")
        return 0
    if database.exists():
        raise ConfigError(
            f"database {database} exists but its key file {key_file} does not; restore the "
            f"key file (or set {KEYS_ENV}) instead of starting a new one"
        )
    if not database.parent.is_dir():
        raise ConfigError(f"database directory {database.parent} does not exist")
    create_key_file(key_file, key)
    print(f"created {key_file} (mode 0600) for the database {database} to come")
    return 0


def keys_rotate(args: argparse.Namespace) -> int:
    return asyncio.run(_keys_rotate(args))


async def _keys_rotate(args: argparse.Namespace) -> int:
    async with existing_store(args) as store:
        report = await store.rotate_keys(actor=getpass.getuser(), batch_size=args.batch_size)
    print(
        f"re-encrypted with key {report.key_id}: {report.run_states} run state(s), "
        f"{report.ledger_results} ledger result(s), {report.seals} decision seal(s) re-made; "
        f"{report.already_current} already current"
        + (f"; {report.skipped_rewritten} rewritten meanwhile" if report.skipped_rewritten else "")
    )
    if report.tampered:
        print(
            f"{len(report.tampered)} blob(s) failed to decrypt and were left as they are "
            f"(audited as tamper_detected): {', '.join(report.tampered)}",
            file=sys.stderr,
        )
        return 1
    return 0
