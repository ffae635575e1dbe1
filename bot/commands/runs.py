"""`approvals-bot runs`: stored agent runs, as operators inspect and control them.

    approvals-bot runs list [--status S] [--requester U] [--agent NAME] [--since WHEN]
                            [--origin slack|terminal] [--limit N] [--after CURSOR] [--json]
                                                      runs, most recently updated first
    approvals-bot runs show RUN_ID [--state] [--json]  one run, its approvals, standing
                                                      decisions and ledger, and its
                                                      (redacted) state
    approvals-bot runs cancel | pause | resume | purge
                                                      see bot.commands.run_control

The list shows each run's task as stored for people (redacted, clipped) and pages by
keyset: past `--limit` it ends with a "more" line giving the next page's command.
`--reveal` (with `--state`) shows the state unredacted and writes a `revealed` audit
event. The formatting (records to JSON-ready dicts and text) is pure.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from bot.commands import run_control
from bot.commands.audit import parse_since
from bot.commands.database import command_group, db_command, existing_store, positive_int
from bot.commands.json_output import approval_json, jsonable
from bot.credentials import redact
from bot.errors import InputError
from bot.review.visible import visible
from bot.service.api import decode_cursor, encode_cursor
from store.records import ApprovalRecord, LedgerEntry, RunFilter, RunRecord

RUN_STATUSES = ("running", "paused", "resuming", "completed", "failed", "cancelled")
RUN_ORIGINS = ("slack", "terminal")
MAX_PAGE = 1000
TASK_CELL = 60


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `runs list`, `runs show`, and the control commands (bot.commands.run_control)."""
    group = command_group(subparsers, "runs", "inspect and control stored agent runs")
    listing = db_command(group, "list", "list runs, most recently updated first", runs_list)
    listing.add_argument("--status", choices=RUN_STATUSES, help="only runs in this status")
    listing.add_argument("--requester", default=None, help="only runs this person started")
    listing.add_argument("--agent", default=None, help="only runs of this agent")
    listing.add_argument(
        "--since", default=None, help="only runs updated since WHEN (ISO 8601, or 30m, 24h, 7d)"
    )
    listing.add_argument("--origin", choices=RUN_ORIGINS, help="only runs started there")
    listing.add_argument(
        "--limit", type=_page_size, default=100, help=f"at most N runs a page (1-{MAX_PAGE})"
    )
    listing.add_argument("--after", default=None, help="the cursor a previous page printed")
    listing.add_argument("--json", action="store_true", help="JSON instead of a table")
    show = db_command(group, "show", "show one run with its approvals and ledger", runs_show)
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
    run_control.register(group)


def _page_size(text: str) -> int:
    value = positive_int(text)
    if value > MAX_PAGE:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_PAGE}")
    return value


def runs_list(args: argparse.Namespace) -> int:
    return asyncio.run(_runs_list(args))


async def _runs_list(args: argparse.Namespace) -> int:
    where = RunFilter(
        status=args.status,
        requester=args.requester,
        agent_name=args.agent,
        updated_since=parse_since(args.since) if args.since is not None else None,
        origin=args.origin,
    )
    after = decode_cursor(args.after) if args.after else None
    async with existing_store(args, keys_required=False) as store:  # runs are in clear
        found = await store.list_runs(where=where, after=after, limit=args.limit + 1)
    runs, extra = found[: args.limit], found[args.limit :]
    if args.json:
        print(json.dumps([run_json(run) for run in runs], indent=2))
    else:
        print(render_runs_table(runs))
    if extra:
        last = runs[-1]
        more = more_line(args, encode_cursor((last.updated_at, last.run_id)))
        print(more, file=sys.stderr if args.json else sys.stdout)
    return 0


def more_line(args: argparse.Namespace, cursor: str) -> str:
    """The command that lists the next page: the same filters, after the last run shown."""
    words = ["approvals-bot", "runs", "list"]
    for flag, value in (
        ("--status", args.status),
        ("--requester", args.requester),
        ("--agent", args.agent),
        ("--since", args.since),
        ("--origin", args.origin),
        ("--db", args.db),
    ):
        if value is not None:
            words += [flag, shlex.quote(str(value))]
    words += ["--limit", str(args.limit), "--after", cursor]
    if args.json:
        words.append("--json")
    return f"-- more: {' '.join(words)}"


def runs_show(args: argparse.Namespace) -> int:
    return asyncio.run(_runs_show(args))


async def _runs_show(args: argparse.Namespace) -> int:
    if args.reveal and not args.state:
        raise InputError("--reveal goes with --state (it shows the state unredacted)")
    async with existing_store(args, keys_required=args.state) as store:  # the state is sealed
        run = await store.get_run(args.run_id)
        if run is None:
            raise InputError(f"no run {args.run_id!r}")
        approvals = await store.list_approvals(run_id=run.run_id, limit=1000)
        ledger = await store.ledger_entries(run_id=run.run_id, limit=1000)
        standing = await store.standing_decisions(run.run_id, active_only=False)
        state_json = await store.load_run_state(run.run_id) if args.state else None
        if args.reveal:
            actor = args.actor or getpass.getuser()
            await store.append_audit(
                "revealed", actor=actor, run_id=run.run_id, detail={"via": "runs show --reveal"}
            )
    detail = run_detail_json(run, approvals, ledger, state_json, reveal=args.reveal)
    detail["standing"] = [jsonable(decision) for decision in standing]
    print(
        json.dumps(detail, indent=2, ensure_ascii=False) if args.json else render_run_detail(detail)
    )
    return 0


# -- formatting (pure) --------------------------------------------------------------


def run_json(run: RunRecord) -> dict[str, Any]:
    return jsonable(run)


def run_detail_json(
    run: RunRecord,
    approvals: Sequence[ApprovalRecord],
    ledger: Sequence[LedgerEntry],
    state_json: str | None,
    *,
    reveal: bool,
) -> dict[str, Any]:
    """The run, its approvals and ledger, and (if loaded) its state, redacted unless reveal."""
    detail: dict[str, Any] = {
        "run": run_json(run),
        "approvals": [approval_json(approval) for approval in approvals],
        "ledger": [jsonable(entry) for entry in ledger],
    }
    if state_json is not None:
        state = json.loads(state_json)
        if reveal:
            detail["state"], detail["redacted_paths"] = state, []
        else:
            detail["state"], detail["redacted_paths"] = redact(state)
    return detail


def render_runs_table(runs: Sequence[RunRecord]) -> str:
    if not runs:
        return "no runs"
    rows = [("RUN", "STATUS", "AGENT", "REQUESTER", "ORIGIN", "UPDATED", "TASK")]
    rows += [
        (
            run.run_id,
            run.status,
            f"{run.agent_name}@{run.agent_version}",
            run.requester or "-",
            run.origin,
            run.updated_at.strftime("%Y-%m-%d %H:%M:%SZ"),
            _task_cell(run),
        )
        for run in runs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _task_cell(run: RunRecord) -> str:
    if run.purged_at is not None:
        return "(purged)"
    task = visible(run.task) if run.task else "-"  # characters that hide text as escapes
    return task if len(task) <= TASK_CELL else task[: TASK_CELL - 1] + "…"


def render_run_detail(detail: dict[str, Any]) -> str:
    run = detail["run"]
    thread = f"{run['channel']} {run['thread_ts']}" if run["thread_ts"] else "-"
    lines = [
        f"run {run['run_id']}: {run['status']} (version {run['version']})",
        f"  agent {run['agent_name']}@{run['agent_version']}, state schema "
        f"{run['schema_version']}, key {run['key_id']}, digest {run['blob_digest'][:16]}...",
        f"  requester {run['requester'] or '-'}, origin {run['origin']}, thread {thread}",
        f"  task: {visible(run['task']) if run['task'] else '-'}",
        f"  created {run['created_at']}, updated {run['updated_at']}",
        *([f"  purged {run['purged_at']} (retention)"] if run["purged_at"] else []),
        *([_engine_line(run["engine"])] if run.get("engine") else []),
        *(
            [f"  needs migration: {run['needs_migration']} (resumes once the version is back)"]
            if run.get("needs_migration")
            else []
        ),
        *(
            [f"  paused by {run['held_by']}: {run['hold_reason']} (runs resume lets it go on)"]
            if run.get("held_by") and run["status"] not in ("completed", "failed", "cancelled")
            else []
        ),
        f"approvals ({len(detail['approvals'])}):",
        *(_approval_line(approval) for approval in detail["approvals"]),
        *(_standing_line(decision) for decision in detail.get("standing", [])),
        f"ledger ({len(detail['ledger'])}):",
        *(
            f"  {entry['execution_key']}  {entry['tool_name']}  {entry['state']}  "
            f"attempt {entry['attempt']}"
            for entry in detail["ledger"]
        ),
    ]
    if "state" in detail:
        paths = detail["redacted_paths"]
        lines.append(f"state (redacted {len(paths)} value(s)):" if paths else "state:")
        lines.append(json.dumps(detail["state"], indent=2, ensure_ascii=False))
    return "\n".join(lines)


def _engine_line(engine: dict[str, Any]) -> str:
    return (
        f"  engine {engine['name']} {engine['version']}, its state schema "
        f"{engine['schema_version']}"
    )


def _standing_line(decision: dict[str, Any]) -> str:
    line = (
        f"  standing: {decision['tool_name']} {decision['decision']} for the rest of the run "
        f"by {decision['decider']} (approval {decision['approval_id']})"
    )
    if decision["revoked_at"]:
        line += f", ended by {decision['revoked_by']}: {decision['revoke_reason']!r}"
    return line


def _approval_line(approval: dict[str, Any]) -> str:
    line = f"  {approval['approval_id']}  {approval['tool_name']}  {approval['status']}"
    if approval["decider"]:
        line += f" by {approval['decider']} at {approval['decided_at']}"
    if approval["reason"]:
        line += f": {approval['reason']!r}"
    if approval["revoked_by"]:
        line += f" (revoked by {approval['revoked_by']} at {approval['revoked_at']})"
    return line
