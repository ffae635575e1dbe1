"""`approvals-bot keys`: the keys that encrypt stored run states.

    approvals-bot keys generate [--print] [--decrypt-only]
                                   add a new newest key (key file), or print one; with
                                   --decrypt-only it goes last: read with, not sealed with
    approvals-bot keys rotate [--in-every-ring]
                                   re-encrypt every blob with the newest key

A process seals with the newest key of its own ring, read when it starts. Rotating while
a server runs with a ring that lacks the new key would leave that server unable to read
what it needs (its runs wait, its readiness says so), so `keys rotate` refuses while a
server holds a SQLite file (the lock `db copy` takes), and on Postgres (whose replicas it
cannot see), unless `--in-every-ring` says the new key is in every process's ring
already (docs/store.md: rotating keys). A tampered blob found by rotation is left as it
is (audited) and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import sys
from collections.abc import Iterator
from typing import Any

from bot.commands.database import (
    command_group,
    database_url,
    db_command,
    existing_store,
    positive_int,
)
from bot.commands.serve_lock import no_server
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
    generate.add_argument(
        "--decrypt-only",
        action="store_true",
        help="add the key last in the key file: every process reads with it, none seals "
        "with it until it is moved first (the first step of a rolling rotation)",
    )
    generate.add_argument("--id", dest="key_id", default=None, help="key id (default: dated)")
    rotate = db_command(
        group,
        "rotate",
        "re-encrypt every stored blob with the newest key (resumable; reports counts)",
        keys_rotate,
    )
    rotate.add_argument("--batch-size", type=positive_int, default=200, help="rows per commit")
    rotate.add_argument(
        "--in-every-ring",
        action="store_true",
        help="the newest key is already in the key ring of every running process (each "
        "restarted with it): rotate next to them",
    )


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
            f"put this entry last in {KEYS_ENV} of every process and restart each, then "
            "move it first and restart each again, then run: approvals-bot keys rotate "
            "--in-every-ring",
            file=sys.stderr,
        )
        return 0
    database = location.path
    key_file = key_file_for(database)
    if key_file.exists():
        ring = prepend_key_to_file(key_file, key, decrypt_only=args.decrypt_only)
        if args.decrypt_only:
            print(f"added key {key.key_id} to {key_file} last of {len(ring.key_ids)} keys: "
                  "read with, not sealed with")  # fmt: skip
            print("restart the bot, then move its line first, restart again and run: "
                  "approvals-bot keys rotate --in-every-ring")  # fmt: skip
            return 0
        print(f"added key {key.key_id} to {key_file} as the newest of {len(ring.key_ids)} keys")
        print("a running bot does not have it yet: restart it, then run: approvals-bot keys "
              "rotate --in-every-ring (or stop it and run: approvals-bot keys rotate)")  # fmt: skip
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
    async with existing_store(args) as store, contextlib.AsyncExitStack() as stack:
        if not args.in_every_ring:
            stack.enter_context(_no_process_without_the_key(database_url(args)))
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


@contextlib.contextmanager
def _no_process_without_the_key(url: str) -> Iterator[None]:
    """No server on the SQLite file for the block (its server lock, as `db copy` holds
    it); on Postgres, where replicas cannot be seen, a refusal: the operator says."""
    location = parse_database_url(url)
    if not isinstance(location, SqliteLocation):
        raise ConfigError(
            f"cannot tell whether replicas serving {location.display} have the new key in "
            "their ring; put it in every replica's ring first (decrypt-only, then newest: "
            "docs/store.md, rotating keys), then run keys rotate --in-every-ring"
        )
    with no_server(
        location.path,
        job="rotate the keys of",
        then="restart it with the new key in its ring and add --in-every-ring, or stop it",
    ):
        yield
