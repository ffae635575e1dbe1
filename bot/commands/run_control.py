"""`approvals-bot runs cancel | pause | resume | purge`: control whole runs.

    approvals-bot runs cancel RUN_ID [--reason TEXT] [--as USER]
        A running, paused or stuck run ends `cancelled`; its open approvals close (their
        cards say "run cancelled: <reason>"), its thread is told, all audited `via: cli`.
    approvals-bot runs pause RUN_ID --reason TEXT [--as USER]
        The run starts nothing new: a worker running it stops before its next model turn
        or tool call (a tool already running finishes), and a run waiting for decisions
        still takes them but is not resumed after them. Its thread is told; audited.
    approvals-bot runs resume RUN_ID [--as USER]
        A paused run (runs pause) is released, and resumed here when nothing is left to
        decide. Any other run: run again, here, the resume of a run left `resuming` by a
        process that died (what the bot's start-up recovery would do), or of a paused
        run with nothing left to decide.
    approvals-bot runs purge --finished-before AGE|TIME [--dry-run] [--yes] [--as USER]
        Retention: finished runs (completed, failed, cancelled) last updated before the
        cut lose their sealed state, ledger results and review snapshots; rows and the
        audit chain stay, and the purge is audited. `--dry-run` counts what would go; at
        a terminal the count is shown and confirmed first (`--yes` skips the question;
        a script's purge, without a terminal, is not asked).

Cancel, pause and resume go through the ApprovalService as operators use it (see
bot.commands.operator: the bot's environment, and Slack when SLACK_BOT_TOKEN is set).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.commands.audit import parse_since
from bot.commands.database import db_command, existing_store, os_user
from bot.commands.operator import operator_service
from bot.commands.session import Session, confirm
from bot.errors import InputError
from store.records import PurgeReport

DEFAULT_CANCEL_REASON = "cancelled by an operator (approvals-bot runs cancel)"


def register(group: argparse._SubParsersAction[Any]) -> None:
    cancel = db_command(group, "cancel", "cancel a running, paused or stuck run", runs_cancel)
    cancel.add_argument("run_id", metavar="RUN_ID")
    cancel.add_argument("--reason", default=DEFAULT_CANCEL_REASON, help="why (audit, thread)")
    _actor(cancel)
    pause = db_command(
        group, "pause", "pause a run: it starts no new step until resumed", runs_pause
    )
    pause.add_argument("run_id", metavar="RUN_ID")
    pause.add_argument("--reason", required=True, help="why (audit, thread)")
    _actor(pause)
    resume = db_command(
        group,
        "resume",
        "let a paused run go on; or resume, here, a run left resuming by a dead process",
        runs_resume,
    )
    resume.add_argument("run_id", metavar="RUN_ID")
    _actor(resume)
    purge = db_command(
        group, "purge", "remove the content of old finished runs (retention)", runs_purge
    )
    purge.add_argument(
        "--finished-before",
        required=True,
        metavar="WHEN",
        help="runs finished before WHEN: an age (90d, 12h) or an ISO 8601 time",
    )
    purge.add_argument(
        "--dry-run", action="store_true", help="say what would be removed; change nothing"
    )
    purge.add_argument(
        "--yes", action="store_true", help="do not ask for confirmation at a terminal"
    )
    _actor(purge)


def _actor(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--as", dest="actor", default=None, metavar="USER", help="who acts (default: OS user)"
    )


def runs_cancel(args: argparse.Namespace) -> int:
    if not args.reason.strip():
        raise InputError("--reason is empty; say why the run is cancelled")
    with Session() as session:
        service = session.enter(operator_service(args))
        outcome = session.run(
            service.cancel_run(args.run_id, actor=args.actor or os_user(), reason=args.reason)
        )
    closed = ", ".join(a.approval_id for a in outcome.closed) or "none"
    print(f"run {outcome.run.run_id} is cancelled; approvals closed: {closed}")
    return 0


def runs_pause(args: argparse.Namespace) -> int:
    if not args.reason.strip():
        raise InputError("--reason is empty; say why the run is paused")
    with Session() as session:
        service = session.enter(operator_service(args))
        run = session.run(
            service.pause_run(args.run_id, actor=args.actor or os_user(), reason=args.reason)
        )
    print(
        f"run {run.run_id} is paused ({run.status}): it starts nothing new, a step already "
        f"running finishes; `approvals-bot runs resume {run.run_id}` lets it go on"
    )
    return 0


def runs_resume(args: argparse.Namespace) -> int:
    actor = args.actor or os_user()
    with Session() as session:
        service = session.enter(operator_service(args))
        run = session.run(service.store.get_run(args.run_id))
        if run is None:
            raise InputError(f"no run {args.run_id!r}")
        was_held = run.held
        if was_held:
            session.run(service.unpause_run(args.run_id, actor=actor))
            print(f"run {args.run_id} released (paused by {run.held_by}: {run.hold_reason})")
        else:
            session.run(service.resume_stuck(args.run_id, actor=actor))
            print(f"resuming run {args.run_id} here ...", flush=True)
        session.run(service.drain())
        run = session.run(service.store.get_run(args.run_id))
        waiting = session.run(service.store.list_approvals(run_id=args.run_id, status="pending"))
    status = run.status if run is not None else "gone"
    print(f"run {args.run_id} is {status}" + _waiting(status, len(waiting)))
    if was_held and status in ("running", "resuming"):
        return 0  # released while its worker in another process was still on it: it goes on
    return 0 if status in ("completed", "paused") else 1


def _waiting(status: str, pending: int) -> str:
    return f", waiting for {pending} decision(s)" if status == "paused" and pending else ""


def runs_purge(args: argparse.Namespace) -> int:
    cut = parse_since(args.finished_before, flag="--finished-before")
    actor = args.actor or os_user()
    with Session() as session:
        store = session.enter(existing_store(args))
        if args.dry_run or (sys.stdin.isatty() and not args.yes):
            preview = session.run(
                store.purge_finished_runs(finished_before=cut, actor=actor, dry_run=True)
            )
            print(f"would purge {purge_counts(preview)}; nothing was changed")
            if args.dry_run or preview.runs == 0:
                return 0
            _confirm_purge(preview.runs)
        report = session.run(store.purge_finished_runs(finished_before=cut, actor=actor))
    print(f"purged {purge_counts(report)}; the audit log records it")
    return 0


def purge_counts(report: PurgeReport) -> str:
    return (
        f"{report.runs} run(s) finished before {report.finished_before.isoformat()}: "
        f"{report.state_blobs} state blob(s), {report.ledger_results} ledger result(s), "
        f"{report.snapshots} review snapshot(s)"
    )


def _confirm_purge(runs: int) -> None:
    confirm(
        f"purge them? The content of {runs} run(s) cannot be brought back",
        missing="no confirmation on standard input; pass --yes",
        refused="nothing was purged",
    )
