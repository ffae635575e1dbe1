"""Operator commands: `keys`, `audit`, `runs`, `db`.

    approvals-bot keys generate [--print]      add a new newest key (key file), or print one
    approvals-bot keys rotate                  re-encrypt every blob with the newest key
    approvals-bot audit export [--since WHEN]  the audit log as JSON lines
    approvals-bot audit verify                 check the hash chain; exit 1 if broken
    approvals-bot runs list [--status S]       runs, newest first
    approvals-bot runs show RUN_ID [--state]   one run, its approvals, its (redacted) state
    approvals-bot db migrate                   bring the schema up to this build

Every command takes `--db` (default: $APPROVALS_DATABASE_URL, else ./approvals.db). Our
errors become one line on stderr and exit code 2 (bot/cli.py); a broken audit chain or a
tampered blob found by rotation exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any, TextIO

from bot.commands.ops_render import (
    parse_since,
    render_run_detail,
    render_runs_table,
    run_detail_json,
    run_json,
)
from bot.errors import ConfigError, InputError
from store import SqliteStore, open_store
from store.api import AuditEvent, RunStatus
from store.audit import event_to_json_line
from store.config import database_url_from_env, parse_database_url
from store.keys import (
    KEYS_ENV,
    create_key_file,
    format_key,
    generate_key,
    key_file_for,
    prepend_key_to_file,
)

RUN_STATUSES = ("running", "paused", "resuming", "completed", "failed", "cancelled")
Command = Callable[[argparse.Namespace], int]


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `keys`, `audit`, `runs` and `db` with their sub-commands."""
    _register_keys(subparsers)
    _register_audit(subparsers)
    _register_runs(subparsers)
    _register_db(subparsers)


def _group(
    subparsers: argparse._SubParsersAction[Any], name: str, help_text: str
) -> argparse._SubParsersAction[Any]:
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=lambda _args, parser=parser: _usage(parser))
    group: argparse._SubParsersAction[Any] = parser.add_subparsers(
        dest=f"{name}_command", metavar="COMMAND"
    )
    return group


def _command(
    group: argparse._SubParsersAction[Any], name: str, help_text: str, command: Command
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = group.add_parser(name, help=help_text, description=help_text)
    parser.add_argument(
        "--db",
        default=None,
        help="database path or sqlite:///path (default: $APPROVALS_DATABASE_URL, "
        "else ./approvals.db)",
    )
    parser.set_defaults(func=command)
    return parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _register_keys(subparsers: argparse._SubParsersAction[Any]) -> None:
    group = _group(subparsers, "keys", "manage the keys that encrypt stored run states")
    generate = _command(
        group,
        "generate",
        "create a new key: added as the newest key of the key file beside the database, "
        f"or printed as kid:base64key for {KEYS_ENV} (--print, or when {KEYS_ENV} is set)",
        keys_generate,
    )
    generate.add_argument("--print", action="store_true", help="print the key, change no file")
    generate.add_argument("--id", dest="key_id", default=None, help="key id (default: dated)")
    rotate = _command(
        group,
        "rotate",
        "re-encrypt every stored blob with the newest key (resumable; reports counts)",
        keys_rotate,
    )
    rotate.add_argument("--batch-size", type=_positive_int, default=200, help="rows per commit")


def _register_audit(subparsers: argparse._SubParsersAction[Any]) -> None:
    group = _group(subparsers, "audit", "export or verify the hash-chained audit log")
    export = _command(group, "export", "write audit events as JSON lines", audit_export)
    export.add_argument(
        "--since",
        default=None,
        help="only events at or after WHEN: ISO 8601 (naive times are UTC) or an age "
        "such as 30m, 24h, 7d",
    )
    export.add_argument("--output", "-o", default=None, help="file to write (default stdout)")
    _command(
        group, "verify", "check the audit chain; exit 1 naming the first bad event", audit_verify
    )


def _register_runs(subparsers: argparse._SubParsersAction[Any]) -> None:
    group = _group(subparsers, "runs", "inspect stored agent runs")
    listing = _command(group, "list", "list runs, most recently updated first", runs_list)
    listing.add_argument("--status", choices=RUN_STATUSES, help="only runs in this status")
    listing.add_argument("--limit", type=_positive_int, default=100, help="at most N runs")
    listing.add_argument("--json", action="store_true", help="JSON instead of a table")
    show = _command(group, "show", "show one run with its approvals and ledger", runs_show)
    show.add_argument("run_id", metavar="RUN_ID")
    show.add_argument(
        "--state", action="store_true", help="include the decrypted state (credentials redacted)"
    )
    show.add_argument("--json", action="store_true", help="one JSON object instead of text")
    show.add_argument(
        "--reveal",
        action="store_true",
        help="with --state: do not redact credentials (writes a `revealed` audit event)",
    )
    show.add_argument("--actor", default=None, help="who reveals (default: your OS user name)")


def _register_db(subparsers: argparse._SubParsersAction[Any]) -> None:
    group = _group(subparsers, "db", "database maintenance")
    _command(group, "migrate", "apply pending schema migrations and report them", db_migrate)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _database_url(args: argparse.Namespace) -> str:
    return str(args.db) if args.db is not None else database_url_from_env()


@contextlib.asynccontextmanager
async def _existing_store(args: argparse.Namespace) -> AsyncIterator[SqliteStore]:
    """The open database, closed on the way out. It refuses to create one: a typo must not
    mint an empty database."""
    url = _database_url(args)
    path = parse_database_url(url).path
    if not path.exists():
        raise ConfigError(
            f"database {path} does not exist (give --db or set APPROVALS_DATABASE_URL)"
        )
    store = await open_store(url)
    try:
        yield store
    finally:
        await store.close()


def keys_generate(args: argparse.Namespace) -> int:
    key = generate_key(args.key_id)
    if args.print or os.environ.get(KEYS_ENV, "").strip():
        print(format_key(key))
        print(
            f"put this entry first in {KEYS_ENV} (keep the old keys after it), restart, "
            "then run: approvals-bot keys rotate",
            file=sys.stderr,
        )
        return 0
    database = parse_database_url(_database_url(args)).path
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
    async with _existing_store(args) as store:
        report = await store.rotate_keys(actor=getpass.getuser(), batch_size=args.batch_size)
    print(
        f"re-encrypted with key {report.key_id}: {report.run_states} run state(s), "
        f"{report.ledger_results} ledger result(s); {report.already_current} already current"
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


def audit_export(args: argparse.Namespace) -> int:
    since = parse_since(args.since) if args.since is not None else None
    events = asyncio.run(_read_audit(args, since))
    if args.output is None:
        _write_lines(sys.stdout, events)
        return 0
    try:
        with open(args.output, "x", encoding="utf-8") as handle:
            _write_lines(handle, events)
    except FileExistsError:
        raise InputError(f"--output {args.output} already exists; choose a new file") from None
    except OSError as error:
        raise InputError(f"--output {args.output} cannot be written: {error.strerror}") from None
    print(f"wrote {len(events)} event(s) to {args.output}", file=sys.stderr)
    return 0


async def _read_audit(args: argparse.Namespace, since: datetime | None) -> list[AuditEvent]:
    async with _existing_store(args) as store:
        return await store.audit_events(since=since)


def _write_lines(stream: TextIO, events: list[AuditEvent]) -> None:
    for event in events:
        stream.write(event_to_json_line(event) + "\n")


def audit_verify(args: argparse.Namespace) -> int:
    return asyncio.run(_audit_verify(args))


async def _audit_verify(args: argparse.Namespace) -> int:
    async with _existing_store(args) as store:
        verification = await store.verify_audit()
        head_seq, head_hash = await store.audit_head()
    if verification.ok:
        print(f"audit log OK: {verification.checked} event(s); head {head_seq} {head_hash}")
        return 0
    print(
        f"audit log BROKEN at event {verification.first_bad_seq}: {verification.problem} "
        f"({verification.checked} event(s) before it verified)"
    )
    return 1


def runs_list(args: argparse.Namespace) -> int:
    return asyncio.run(_runs_list(args))


async def _runs_list(args: argparse.Namespace) -> int:
    status: RunStatus | None = args.status
    async with _existing_store(args) as store:
        runs = await store.list_runs(status=status, limit=args.limit)
    if args.json:
        print(json.dumps([run_json(run) for run in runs], indent=2))
    else:
        print(render_runs_table(runs))
    return 0


def runs_show(args: argparse.Namespace) -> int:
    return asyncio.run(_runs_show(args))


async def _runs_show(args: argparse.Namespace) -> int:
    if args.reveal and not args.state:
        raise InputError("--reveal goes with --state (it shows the state unredacted)")
    async with _existing_store(args) as store:
        run = await store.get_run(args.run_id)
        if run is None:
            raise InputError(f"no run {args.run_id!r}")
        approvals = await store.list_approvals(run_id=run.run_id, limit=1000)
        ledger = await store.ledger_entries(run_id=run.run_id, limit=1000)
        state_json = await store.load_run_state(run.run_id) if args.state else None
        if args.reveal:
            actor = args.actor or getpass.getuser()
            await store.append_audit(
                "revealed", actor=actor, run_id=run.run_id, detail={"via": "runs show --reveal"}
            )
    detail = run_detail_json(run, approvals, ledger, state_json, reveal=args.reveal)
    print(
        json.dumps(detail, indent=2, ensure_ascii=False) if args.json else render_run_detail(detail)
    )
    return 0


def db_migrate(args: argparse.Namespace) -> int:
    return asyncio.run(_db_migrate(args))


async def _db_migrate(args: argparse.Namespace) -> int:
    store = await open_store(_database_url(args))
    try:
        report = store.migration_report
    finally:
        await store.close()
    if report.applied:
        print(
            f"migrated {store.database.path} from schema version {report.before} to "
            f"{report.after}: applied {', '.join(report.applied)}"
        )
    else:
        print(f"{store.database.path} is at schema version {report.after}; nothing to apply")
    return 0
