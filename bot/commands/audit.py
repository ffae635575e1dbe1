"""`approvals-bot audit`: the hash-chained audit log, exported or verified.

approvals-bot audit export [--since WHEN] [-o FILE]   the audit log as JSON lines
approvals-bot audit verify [--json]                  check the chain; exit 1 if broken

`verify` also names every row whose sealed data names a key id the key ring lacks (when
a ring is at hand): nothing open needs those rows (start-up refuses a ring lacking what
open runs need), so a key id no ring has there was planted, or its key dropped before
rotation reached it: tampering, exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.commands.database import OpenStore, command_group, db_command, existing_store
from bot.commands.json_output import print_json
from bot.errors import InputError
from bot.policy.durations import parse_duration
from store.audit import event_to_json_line
from store.crypto import NoKeys
from store.records import AuditEvent
from store.sql.keys import KeyUse, unknown_key_uses


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `audit export` and `audit verify`."""
    group = command_group(subparsers, "audit", "export or verify the hash-chained audit log")
    export = db_command(group, "export", "write audit events as JSON lines", audit_export)
    export.add_argument(
        "--since",
        default=None,
        help="only events at or after WHEN: ISO 8601 (naive times are UTC) or an age "
        "such as 30m, 24h, 7d",
    )
    export.add_argument("--output", "-o", default=None, help="file to write (default stdout)")
    verify = db_command(
        group, "verify", "check the audit chain; exit 1 naming the first bad event", audit_verify
    )
    verify.add_argument("--json", action="store_true", help="one JSON object instead of text")


def parse_since(text: str, *, now: datetime | None = None, flag: str = "--since") -> datetime:
    """ISO 8601 (a naive time is UTC; a date means its midnight UTC) or an age: 30m, 24h, 7d.
    Errors name `flag`."""
    value = text.strip()
    try:
        age = parse_duration(value, allow_zero=True, longest=None)
    except ValueError:  # not an age: perhaps a time
        age = None
    if age is not None:
        try:
            return (now or datetime.now(UTC)) - age
        except OverflowError:
            raise InputError(f"{flag} {text!r} reaches back before the year 1") from None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{flag} {text!r} is neither an ISO 8601 time (2026-11-29T12:00Z) "
            "nor an age like 30m, 24h or 7d"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


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
    async with existing_store(args, keys_required=False) as store:  # the log is in clear
        return await store.audit_events(since=since)


def _write_lines(stream: TextIO, events: list[AuditEvent]) -> None:
    for event in events:
        stream.write(event_to_json_line(event) + "\n")


def audit_verify(args: argparse.Namespace) -> int:
    return asyncio.run(_audit_verify(args))


async def _audit_verify(args: argparse.Namespace) -> int:
    async with existing_store(args, keys_required=False) as store:  # the chain is unkeyed
        verification = await store.verify_audit()
        head_seq, head_hash = await store.audit_head()
        unknown = await _unknown_keys(store)
    ok = verification.ok and not unknown
    if args.json:
        print_json({
            **asdict(verification), "head": {"seq": head_seq, "hash": head_hash},
            "unknown_key_ids": None if unknown is None else [str(use) for use in unknown],
        })  # fmt: skip
        return 0 if ok else 1
    if verification.ok:
        print(f"audit log OK: {verification.checked} event(s); head {head_seq} {head_hash}")
    else:
        print(
            f"audit log BROKEN at event {verification.first_bad_seq}: {verification.problem} "
            f"({verification.checked} event(s) before it verified)"
        )
    _tell_keys(unknown)
    return 0 if ok else 1


async def _unknown_keys(store: OpenStore) -> list[KeyUse] | None:
    """The rows naming a key id the ring lacks (None: no key ring at hand to judge by)."""
    if isinstance(store.keyring, NoKeys):
        return None
    return await unknown_key_uses(store.database, store.keyring)


def _tell_keys(unknown: list[KeyUse] | None) -> None:
    if unknown is None:
        print("sealed data: key ids not checked (no key ring at hand)")
    elif not unknown:
        print("sealed data: every key id it names is in the key ring")
    else:
        print(
            f"sealed data TAMPERED: {len(unknown)} row(s) name a key id the key ring lacks "
            "(planted, or a key dropped before rotation reached them): "
            + "; ".join(str(use) for use in unknown[:20])
            + ("; ..." if len(unknown) > 20 else "")
        )
