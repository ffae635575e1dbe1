"""The database the operator commands work on, and `approvals-bot db migrate`.

Every operator command (`keys`, `audit`, `runs`, `db`) takes `--db` (default:
$APPROVALS_DATABASE_URL, else ./approvals.db) and, except `keys generate` and
`db migrate`, opens only a database file that exists: a typo must not mint an empty one
(a Postgres database is created by its operator; opening it applies the migrations). Our
errors become one line on stderr and exit code 2 (bot/cli.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from bot.commands.serve_lock import no_server
from bot.errors import ConfigError
from store import SqliteStore, open_store
from store.audit import recorded_with
from store.config import Location, SqliteLocation, database_url_from_env, parse_database_url
from store.copy import copy_store
from store.keys import KEYS_ENV, key_file_for
from store.sql.keys import sealed_key_ids

if TYPE_CHECKING:
    from store.postgres.store import PostgresStore

Command = Callable[[argparse.Namespace], int]
OpenStore: TypeAlias = "SqliteStore | PostgresStore"  # what `existing_store` opens


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `db migrate` and `db copy`."""
    group = command_group(subparsers, "db", "database maintenance")
    db_command(group, "migrate", "apply pending schema migrations and report them", db_migrate)
    copy = db_command(
        group,
        "copy",
        "copy every run, approval, vote, ledger row and the audit chain of the database "
        "into another, empty one (to move from SQLite to Postgres)",
        db_copy,
    )
    copy.add_argument(
        "--to", required=True, metavar="URL", help="the empty target: postgresql://user@host/db"
    )


def command_group(
    subparsers: argparse._SubParsersAction[Any], name: str, help_text: str
) -> argparse._SubParsersAction[Any]:
    """A command with sub-commands (`keys`, `audit`, ...); alone it prints its usage."""
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=lambda _args, parser=parser: _usage(parser))
    group: argparse._SubParsersAction[Any] = parser.add_subparsers(
        dest=f"{name}_command", metavar="COMMAND"
    )
    return group


def db_command(
    group: argparse._SubParsersAction[Any], name: str, help_text: str, command: Command
) -> argparse.ArgumentParser:
    """A sub-command that works on the database (it takes `--db`)."""
    parser: argparse.ArgumentParser = group.add_parser(name, help=help_text, description=help_text)
    parser.add_argument(
        "--db",
        default=None,
        help="database path, sqlite:///path or postgresql://user@host:port/db "
        "(default: $APPROVALS_DATABASE_URL, else ./approvals.db)",
    )
    parser.set_defaults(func=command)
    return parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def database_url(args: argparse.Namespace) -> str:
    return str(args.db) if args.db is not None else database_url_from_env()


def os_user() -> str:
    """Who runs this command, by the operating system (the default actor)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER", "") or "operator"


@contextlib.asynccontextmanager
async def existing_store(
    args: argparse.Namespace, *, keys_required: bool = True
) -> AsyncIterator[OpenStore]:
    """The open database, closed on the way out. It refuses to create a database file: a
    typo must not mint an empty database. Every audit event written meanwhile records the
    operating-system user (`os_user`) beside its actor (`--as`). A command that reads
    only what is stored in clear passes `keys_required=False`: it works where the keys
    are not at hand."""
    url = database_url(args)
    location = parse_database_url(url)
    if isinstance(location, SqliteLocation) and not location.path.exists():
        raise ConfigError(
            f"database {location.path} does not exist (give --db or set APPROVALS_DATABASE_URL)"
        )
    store = await open_store(url, keys_required=keys_required)
    try:
        with recorded_with(os_user=os_user()):  # beside the `--as` actor: who typed it
            yield store
    finally:
        await store.close()


def db_migrate(args: argparse.Namespace) -> int:
    return asyncio.run(_db_migrate(args))


async def _db_migrate(args: argparse.Namespace) -> int:
    store = await open_store(database_url(args))
    try:
        report = store.migration_report
    finally:
        await store.close()
    if report.applied:
        print(
            f"migrated {store.location} from schema version {report.before} to "
            f"{report.after}: applied {', '.join(report.applied)}"
        )
    else:
        print(f"{store.location} is at schema version {report.after}; nothing to apply")
    return 0


def db_copy(args: argparse.Namespace) -> int:
    return asyncio.run(_db_copy(args))


async def _db_copy(args: argparse.Namespace) -> int:
    """Copy with no server on the source (a SQLite file's server lock held throughout),
    telling each table on stderr, then verify the copy's audit chain and compare its
    head with the source's."""
    async with existing_store(args) as source, contextlib.AsyncExitStack() as stack:
        location = parse_database_url(database_url(args))
        if isinstance(location, SqliteLocation):
            stack.enter_context(no_server(location.path, job="copy"))
        target = await open_store(args.to, keyring=source.keyring)
        try:
            report = await copy_store(
                source.database,
                target.database,
                source_version=source.migration_report.after,
                target_version=target.migration_report.after,
                target_name=target.location,
                progress=_tell_table,
            )
            verification = await target.verify_audit()
            head, copied_head = await source.audit_head(), await target.audit_head()
            sealed = await sealed_key_ids(target.database)
        finally:
            await target.close()
    counts = ", ".join(f"{rows} {table}" for table, rows in report.rows.items())
    print(f"copied {source.location} to {target.location}: {counts}")
    if not verification.ok or copied_head != head:
        print(
            f"the copy's audit chain does not verify ({verification.problem} at event "
            f"{verification.first_bad_seq}; head {copied_head[0]}, source {head[0]})",
            file=sys.stderr,
        )
        return 1
    print(f"audit chain verified on the copy: {verification.checked} events, head {head[1]}")
    print(carry_the_keys(location, parse_database_url(args.to), sealed))
    return 0


def carry_the_keys(source: Location, target: Location, sealed: set[str]) -> str:
    """What the copy needs to be read where the bot will run: the keys its sealed data
    was sealed with, carried over from where the source's came from."""
    if not sealed:
        return (
            "nothing in it is sealed yet: the copy needs a key ring of its own "
            f"({KEYS_ENV}, or the key file a SQLite copy makes beside itself)"
        )
    sealed_with = (
        f"carry the keys over: the copy is sealed with key id(s) {', '.join(sorted(sealed))}"
    )
    if os.environ.get(KEYS_ENV, "").strip() or not isinstance(source, SqliteLocation):
        return f"{sealed_with}, from {KEYS_ENV}: run the bot on {target.display} with the same"
    key_file = key_file_for(source.path)
    if isinstance(target, SqliteLocation):
        return (
            f"{sealed_with}, in {key_file}: copy it beside the copy "
            f"(cp -p {key_file} {key_file_for(target.path)}, mode 0600)"
        )
    return (
        f"{sealed_with}, in {key_file}: run the bot on {target.display} with "
        f'{KEYS_ENV}="$(paste -sd, {key_file})"'
    )


def _tell_table(table: str, rows: int) -> None:
    print(f"copied {table}: {rows} row(s)", file=sys.stderr, flush=True)
