"""`approvals-bot approvals`: decide from the command line when Slack cannot.

    approvals-bot approvals list [--run RUN] [--status S] [--limit N] [--after CURSOR] [--json]
    approvals-bot approvals show ID [--as USER] [--json]
    approvals-bot approvals decide ID --approve|--reject --as USER --reason TEXT
                                      [--message TEXT] [--digest HEX] [--always | --window]
    approvals-bot approvals revoke ID --as USER --reason TEXT

Every one goes through the real ApprovalService (bot.commands.operator): the policy,
the self-approval rule, the quorum and the expiry hold as in Slack, and the audit says
the decision came `via: cli`. `decide` first shows the call as a card shows it (redacted
arguments, digest, expiry) and binds the vote to that digest: give it with `--digest`
(scripts) or confirm it at the prompt; if the arguments changed since, nothing is
decided. A decision that completes the run's approvals resumes the run here, and its
outcome is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, get_args

from bot.commands.database import command_group, db_command, positive_int
from bot.commands.groups import add_groups_option, terminal_groups, unknown_groups_note
from bot.commands.json_output import approval_json, event_json, jsonable, print_json
from bot.commands.operator import operator_service
from bot.commands.session import Session, confirm
from bot.commands.terminal import compact, expiry, standing_text
from bot.errors import InputError, NotAuthorizedError
from bot.review.snapshot import ReviewSnapshot
from bot.service import ApprovalService, ApprovalView, DecisionResult
from bot.service.api import WindowOffer, decode_cursor, encode_cursor
from bot.service.waiting import elapsed_text
from bot.slack.config import web_api_from_env
from store.records import ApprovalRecord, ApprovalStatus, AuditEvent

APPROVAL_STATUSES: tuple[str, ...] = get_args(ApprovalStatus)

DIGEST_HEX = re.compile(r"[0-9a-f]{64}")
MAX_LIST = 1000


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Register `approvals list | show | decide | revoke`."""
    group = command_group(
        subparsers, "approvals", "list, show, decide and revoke approvals (as in Slack)"
    )
    listing = db_command(group, "list", "pending approvals, oldest first", approvals_list)
    listing.add_argument("--run", default=None, help="every approval of this run instead")
    listing.add_argument(
        "--status",
        choices=APPROVAL_STATUSES,
        default=None,
        help="only approvals in this status (default: pending; with --run: every status)",
    )
    listing.add_argument("--limit", type=_list_limit, default=100, help="at most N (1-1000)")
    listing.add_argument(
        "--after", default=None, help="the cursor a previous page of pending ones printed"
    )
    _json_flag(listing)
    show = db_command(group, "show", "one approval: the call, votes, trail", approvals_show)
    show.add_argument("approval_id", metavar="ID")
    show.add_argument("--as", dest="viewer", default=None, help="say what USER may do with it")
    _json_flag(show)
    add_groups_option(show)
    decide = db_command(
        group, "decide", "approve or reject a call, as USER, under the policy", approvals_decide
    )
    decide.add_argument("approval_id", metavar="ID")
    choice = decide.add_mutually_exclusive_group(required=True)
    choice.add_argument("--approve", action="store_true", help="approve the call")
    choice.add_argument("--reject", action="store_true", help="reject the call")
    _person(decide, "who decides (a Slack user id, as the policy names approvers)")
    decide.add_argument("--reason", required=True, help="why (audit only; the agent never sees it)")
    decide.add_argument("--message", default=None, help="on reject: what the agent is told")
    decide.add_argument(
        "--digest",
        default=None,
        help="the digest shown for the call (64 hex); without it, confirm it at the prompt",
    )
    lasting = decide.add_mutually_exclusive_group()
    lasting.add_argument(
        "--always",
        action="store_true",
        help="the decision stands for the rest of the run (where the policy allows it)",
    )
    lasting.add_argument(
        "--window",
        action="store_true",
        help="approve and open an approval window: later calls of the tool whose "
        "window_match arguments are equal run on this approval for the policy's "
        "allow_window (where the policy allows it)",
    )
    add_groups_option(decide)
    revoke = db_command(group, "revoke", "withdraw a call before it runs", approvals_revoke)
    revoke.add_argument("approval_id", metavar="ID")
    _person(revoke, "who revokes")
    revoke.add_argument("--reason", required=True, help="why (audit)")
    add_groups_option(revoke)


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")


def _person(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--as", dest="actor", required=True, metavar="USER", help=help_text)


def _list_limit(text: str) -> int:
    value = positive_int(text)
    if value > MAX_LIST:
        raise argparse.ArgumentTypeError(f"{value} is more than {MAX_LIST}")
    return value


# -- list and show ----------------------------------------------------------------------


def approvals_list(args: argparse.Namespace) -> int:
    status: ApprovalStatus | None = args.status or (None if args.run is not None else "pending")
    if args.after is not None and (args.run is not None or status != "pending"):
        raise InputError("--after pages the pending approvals of every run; drop --run/--status")
    with Session() as session:
        service = session.enter(operator_service(args))
        if args.run is not None or status != "pending":
            found = session.run(
                service.store.list_approvals(run_id=args.run, status=status, limit=args.limit + 1)
            )
            rows, more = found[: args.limit], None
            if len(found) > args.limit:
                more = f"more than {args.limit}: raise --limit (up to {MAX_LIST}) or add --run"
        else:
            after = decode_cursor(args.after) if args.after else None
            page = session.run(service.store.pending_page(after=after, limit=args.limit + 1))
            rows, extra = page[: args.limit], page[args.limit :]
            last = rows[-1] if extra else None
            cursor = encode_cursor((last.created_at, last.approval_id)) if last else None
            more = (
                f"approvals-bot approvals list --limit {args.limit} --after {cursor}"
                + (" --json" if args.json else "")
                if cursor
                else None
            )
    if args.json:
        print_json([approval_json(row) for row in rows])
    else:
        print(render_list(rows))
    if more is not None:
        print(f"-- more: {more}", file=sys.stderr if args.json else sys.stdout)
    return 0


def render_list(rows: list[ApprovalRecord]) -> str:
    if not rows:
        return "no approvals"
    table = [("APPROVAL", "STATUS", "TOOL", "RUN", "REQUESTER", "EXPIRES")]
    table += [
        (
            row.approval_id,
            row.status,
            row.tool_name,
            row.run_id,
            row.requester or "-",
            expiry(row) if row.status == "pending" else "-",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    )


def approvals_show(args: argparse.Namespace) -> int:
    with Session() as session:
        service = session.enter(operator_service(args))
        view = session.run(service.approval_view(args.approval_id, viewer=args.viewer))
        trail = session.run(service.approval_trail(args.approval_id, viewer=args.viewer or ""))
    note = None if view.can_decide else _groups_note(service, view.approval, args.viewer, args)
    if args.json:
        print_json(view_json(view, trail, viewer=args.viewer, note=note))
        return 0
    print(render_view(view, viewer=args.viewer))
    if note is not None:
        print(f"  note:      {note}")
    print(f"audit trail ({len(trail)}):")
    for event in trail:
        print(render_event(event))
    return 0


def view_json(
    view: ApprovalView, trail: list[AuditEvent], *, viewer: str | None, note: str | None
) -> dict[str, Any]:
    """What `approvals show` prints, as one JSON object."""
    document: dict[str, Any] = {
        "approval": approval_json(view.approval),
        "approvals_count": view.approvals_count,
        "required": view.required,
        "waited_seconds": round(view.waited_seconds, 3),
        "voters": list(view.voters),
        "approvers": list(view.approvers),
        "standing": jsonable(view.standing) if view.standing is not None else None,
        "trail": [event_json(event) for event in trail],
    }
    if viewer is not None:
        document["viewer"] = {
            "id": viewer,
            "can_decide": view.can_decide,
            "can_revoke": view.can_revoke,
            "can_stand": view.can_stand,
            "why_not": view.why_not,
            "note": note,
        }
    return document


def render_view(view: ApprovalView, *, viewer: str | None) -> str:
    """The call as its card shows it (redacted arguments, digest), for a terminal."""
    approval = view.approval
    warnings: list[str] = []
    try:
        snapshot = ReviewSnapshot.from_json(approval.snapshot)
        arguments = compact(snapshot.arguments)
        hidden = snapshot.redacted_paths + snapshot.omitted_fields
        warnings = snapshot.script_warnings()
    except InputError:
        arguments, hidden = "(snapshot unreadable)", []
    approvers = ", ".join(view.approvers) or "anyone but the requester"
    lines = [
        f"approval {approval.approval_id}: {approval.tool_name}, {approval.status}",
        f"  run:       {approval.run_id}",
        f"  requester: {approval.requester or '-'}",
        f"  arguments: {arguments}",
        *([f"  hidden:    {', '.join(hidden)}"] if hidden else []),
        *(f"  warning:   {line}" for line in warnings),
        f"  digest:    {approval.arguments_digest}",
        f"  expires:   {expiry(approval)}",
        f"  waited:    {waited_text(view)}",
        f"  quorum:    {view.approvals_count} of {view.required} "
        f"({', '.join(view.voters) or 'no approvals yet'}); approvers: {approvers}",
    ]
    if approval.decider:
        lines.append(f"  decided:   by {approval.decider}: {approval.reason or '-'}")
    if approval.revoked_by:
        lines.append(f"  revoked:   by {approval.revoked_by}: {approval.revoke_reason or '-'}")
    if view.standing is not None:
        lines.append(f"  standing:  {standing_text(view.standing)}")
    if viewer is not None:
        may: list[str] = list(view.allowed_actions())
        if view.can_stand:
            may.append("decide it for the rest of the run (--always)")
        if view.window is not None and view.can_decide:
            may.append(f"approve it with a window ({window_text(view.window)}, --window)")
        lines.append(f"  {viewer} may: {', '.join(may) or 'nothing'}")
        if view.why_not and not view.can_decide:
            lines.append(f"  not decide: {view.why_not}")
    return "\n".join(lines)


def waited_text(view: ApprovalView) -> str:
    """How long the call has waited (pending) or waited until it closed: its time to
    decision, as `approvals_time_to_decision_seconds` counts it."""
    waited = elapsed_text(view.waited_seconds)
    status = view.approval.status
    return f"{waited} so far" if status == "pending" else f"{waited} until {status}"


def render_event(event: AuditEvent) -> str:
    detail = json.dumps(dict(event.detail), ensure_ascii=False, sort_keys=True)
    return f"  {event.seq}  {event.at.isoformat()}  {event.kind}  {event.actor or '-'}  {detail}"


# -- decide and revoke ------------------------------------------------------------------


def approvals_decide(args: argparse.Namespace) -> int:
    if args.message is not None and not args.reject:
        raise InputError("--message goes with --reject (it is what the agent is told)")
    if args.digest is not None and not DIGEST_HEX.fullmatch(args.digest):
        raise InputError("--digest takes the 64 hex digits shown for the call")
    with Session() as session:
        service = session.enter(operator_service(args))
        view = session.run(service.approval_view(args.approval_id, viewer=args.actor))
        print(render_view(view, viewer=args.actor))
        digest = args.digest or _confirm(view, approve=args.approve)
        try:
            result = session.run(_decide(service, args, digest))
        except NotAuthorizedError as error:
            note = _groups_note(service, view.approval, args.actor, args)
            if note is not None:
                error.add_note(note)
            raise
        print(decided_text(result))
        if result.resume_started:
            print(f"resuming run {result.approval.run_id} here ...", flush=True)
            session.run(service.drain())
            run = session.run(service.store.get_run(result.approval.run_id))
            print(f"run {result.approval.run_id} is {run.status if run else 'gone'}")
    return 0


def _groups_note(
    service: ApprovalService, approval: ApprovalRecord, person: str | None, args: argparse.Namespace
) -> str | None:
    """Whether a refusal may come of user groups this command does not know the members of."""
    if person is None:
        return None
    groups = terminal_groups(args, asks_slack=web_api_from_env(os.environ) is not None)
    if groups is None:
        return None
    rule = service.policy.rule_for(approval.tool_name)
    return unknown_groups_note(rule, person, groups, slack_possible=True)


def _confirm(view: ApprovalView, *, approve: bool) -> str:
    """The digest shown, once the person confirmed it at the prompt."""
    digest = view.approval.arguments_digest
    if not sys.stdin.isatty():
        raise InputError(
            f"confirm the digest: pass --digest {digest} (the call shown above), or run "
            "this at a terminal to confirm it"
        )
    verb = "approve" if approve else "reject"
    confirm(
        f"{verb} {view.approval.tool_name} with digest {digest[:16]}…?",
        missing="no confirmation on standard input; pass --digest",
        refused="nothing was decided",
    )
    return digest


async def _decide(
    service: ApprovalService, args: argparse.Namespace, digest: str
) -> DecisionResult:
    return await service.decide(
        args.approval_id,
        approve=bool(args.approve),
        decider=args.actor,
        reason=args.reason,
        message=args.message,
        digest=digest,
        always=args.always,
        window=args.window,
    )


def window_text(offer: WindowOffer) -> str:
    """How long a window lasts and what its calls must share, as people are told."""
    fields = ", ".join(offer.match_fields) or "no argument"
    return f"{elapsed_text(offer.lasts.total_seconds())}, equal {fields}"


def decided_text(result: DecisionResult) -> str:
    approval = result.approval
    if approval.status == "pending":
        return (
            f"vote counted: {result.approvals_count} of {result.required} approvals "
            f"({', '.join(result.voters)})"
        )
    return f"{approval.approval_id} is {approval.status}"


def approvals_revoke(args: argparse.Namespace) -> int:
    with Session() as session:
        service = session.enter(operator_service(args))
        record = session.run(service.revoke(args.approval_id, actor=args.actor, reason=args.reason))
        session.run(service.drain())
    print(f"{record.approval_id} is {record.status}")
    return 0
