"""`approvals-bot demo "<task>"`: the ops agent in the terminal, through the real service.

The demo is the bot without Slack: the same ApprovalService, store (runs, approvals,
audit events and ledger in `./approvals.db` by default), runtime and ops agent, with a
notifier that prints to the terminal. Each pending call is shown redacted with its
argument digest; the decision is asked at the prompt, or given by flags for scripts.
The run's requester is `demo-requester`, so the default approver (you) may decide.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from bot.agents import close_model, model_from_env
from bot.credentials import redact_text
from bot.demo import default_registry, ops_dependencies
from bot.errors import InputError, RunStateError
from bot.review import arguments_json, visible
from bot.service import ApprovalService, Location, TaskOwner, installation_worker_id
from bot.service.api import (
    ApprovalDecided,
    ApprovalExpired,
    ApprovalReminder,
    ApprovalRequested,
    ApprovalUpdated,
    CallUncertain,
    Event,
    ExecutionRefused,
    ResumeStalled,
    RunFailed,
    RunFinished,
    RunStarted,
)
from store import open_store
from store.api import ApprovalRecord, RunRecord
from store.config import database_url_from_env

DEMO_REQUESTER = "demo-requester"
DEFAULT_REASON = "decided in the approvals-bot terminal demo"

HELP = """\
Run the ops agent on TASK in the terminal, through the same service, store and audit
trail as the Slack bot. The offline model understands: deploy <service> <version>,
restart <service>, set <service> <key>=<value>, status <service>, joined by "and".

Each call that needs approval is printed with its redacted arguments (characters that
hide or reorder text shown as escapes such as \\u202e, words mixing scripts flagged)
and the call's keyed digest; you approve or reject it with a reason (the reason is
audit only; on reject, the message is what the agent sees). The run is requested by
"demo-requester", so you, the approver, may decide.

Secrets never enter the stored state: the ops tools read OPS_API_TOKEN as a runtime
dependency, and a run context (--context-json) holding a credential-looking value is
refused (exit code 2) with the path of the offending field.

Environment: APPROVALS_DATABASE_URL (default ./approvals.db), APPROVALS_KEYS (default a
key file beside the database), APPROVALS_DEMO_EFFECTS (effects file, default
./demo-effects.jsonl), OPS_API_TOKEN, OPS_DEMO_LATENCY, APPROVALS_MODEL (offline, the
default, or openai with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL).

examples:
  approvals-bot demo "deploy payments 1.2.3"
  approvals-bot demo "deploy payments 1.2.3" --approve --reason "CR-42"
  approvals-bot demo "restart api" --reject --message "not during business hours" \\
      --reason "change freeze"
  approvals-bot demo "status api" --context-json '{"tenant": "acme"}'
"""


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the ops agent in the terminal, with approvals at the prompt",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("task", help='what the agent should do, e.g. "deploy payments 1.2.3"')
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--approve", action="store_true", help="approve every pending call")
    choice.add_argument("--reject", action="store_true", help="reject every pending call")
    parser.add_argument("--message", help="on reject: what the agent is told (default neutral)")
    parser.add_argument("--approver", default=None, help="who decides (default: your OS user name)")
    parser.add_argument(
        "--reason", default=None, help=f"why (audit only; default with flags: {DEFAULT_REASON!r})"
    )
    parser.add_argument(
        "--state",
        type=Path,
        help="write the paused run state JSON here (owner-only; it holds the tool "
        "arguments in clear and the run's digest key, but never the token or a credential "
        "from the context)",
    )
    parser.add_argument(
        "--db",
        default=None,
        help="database path or sqlite:///path "
        "(default: $APPROVALS_DATABASE_URL, else ./approvals.db)",
    )
    parser.add_argument(
        "--context-json",
        default=None,
        help="run context as a JSON object, stored with the run (secrets are refused)",
    )
    parser.set_defaults(func=run_demo)


@dataclass(frozen=True, kw_only=True)
class Choice:
    approve: bool
    reason: str
    message: str | None


def run_demo(args: argparse.Namespace) -> int:
    if args.message is not None and args.approve:
        raise InputError("--message goes with --reject (it is what the agent is told)")
    if args.state is not None and not args.state.parent.is_dir():
        raise InputError(f"--state {args.state}: the directory {args.state.parent} does not exist")
    context = parse_context(args.context_json)
    return asyncio.run(_demo(args, context))


def parse_context(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"--context-json is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InputError("--context-json must be a JSON object")
    return value


async def _demo(args: argparse.Namespace, context: dict[str, Any] | None) -> int:
    url = args.db if args.db is not None else database_url_from_env()
    async with contextlib.AsyncExitStack() as stack:  # each part closed by whoever opened it
        model = model_from_env()  # first: a bad APPROVALS_MODEL leaves no database behind
        stack.push_async_callback(close_model, model)
        store = await open_store(url)
        stack.push_async_callback(store.close)
        service = ApprovalService(
            store=store,
            registry=default_registry(model),
            notifier=TerminalNotifier(sys.stdout),
            dependencies=ops_dependencies(),
            tasks=TaskOwner(),
            worker_id=installation_worker_id(url),
        )
        # drained already when the run ends; on Ctrl-C, stop at once
        stack.push_async_callback(partial(service.aclose, timeout=0))
        run = await service.start_run(
            agent_name="ops",
            task=args.task,
            requester=DEMO_REQUESTER,
            channel=None,
            context=context,
        )
        run = await _decide_until_done(service, run, args)
    return 0 if run.status == "completed" else 1


async def _decide_until_done(
    service: ApprovalService, run: RunRecord, args: argparse.Namespace
) -> RunRecord:
    approver = args.approver or _os_user()
    while run.status == "paused":
        pending = await service.store.list_approvals(run_id=run.run_id, status="pending")
        if not pending:
            break  # uncertain calls wait for reconciliation; the notifier said so
        if args.state is not None:
            state = await service.load_state(run.run_id)
            _write_private(args.state, state.to_json())
            print(f"paused state written to {args.state}")
        for approval in pending:
            choice = _flag_choice(args) or _ask(approval)
            await service.decide(
                approval.approval_id,
                approve=choice.approve,
                decider=approver,
                reason=choice.reason,
                message=choice.message,
            )
        await service.drain()
        run = await _reload(service, run)
    return run


async def _reload(service: ApprovalService, run: RunRecord) -> RunRecord:
    current = await service.store.get_run(run.run_id)
    if current is None:
        raise RunStateError(f"run {run.run_id} disappeared from the database")
    return current


def _write_private(path: Path, text: str) -> None:
    """Write `text` to a file only its owner may read: the state holds no credential
    from the context or the dependencies, but it does hold the tool arguments in clear
    and the run's digest key (with both, the card's digests are no secret anyway)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as error:
        raise InputError(f"--state {path} cannot be written: {error.strerror}") from None
    os.fchmod(descriptor, 0o600)  # also when the file existed with a wider mode
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _flag_choice(args: argparse.Namespace) -> Choice | None:
    if not (args.approve or args.reject):
        return None
    return Choice(
        approve=bool(args.approve),
        reason=args.reason or DEFAULT_REASON,
        message=args.message if args.reject else None,
    )


def _ask(approval: ApprovalRecord) -> Choice:
    answer = _prompt(f"approve or reject {approval.tool_name}? [a/r] ").lower()
    while answer not in ("a", "approve", "r", "reject"):
        answer = _prompt("please answer a (approve) or r (reject): ").lower()
    approve = answer.startswith("a")
    reason = _prompt("reason (audit only): ")
    while not reason:
        reason = _prompt("a reason is required: ")
    message = None if approve else (_prompt("message to the agent (optional): ") or None)
    return Choice(approve=approve, reason=reason, message=message)


def _prompt(question: str) -> str:
    try:
        return input(question).strip()
    except EOFError:
        raise InputError(
            "no decision on standard input; pass --approve or --reject for a non-interactive run"
        ) from None


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return os.environ.get("USER", "") or "demo-approver"


class TerminalNotifier:
    """The service's notifier for a terminal: plain lines on `out`."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    async def notify(self, event: Event) -> Location | None:
        print(_line(event), file=self._out, flush=True)
        return None  # no thread, no card: nothing to update later


def _line(event: Event) -> str:
    match event:
        case RunStarted(run=run, task=task):
            task_shown = visible(redact_text(task))
            return f"run {run.run_id} ({run.agent_name} v{run.agent_version}): {task_shown}"
        case ApprovalRequested(approval=approval, snapshot=snapshot):
            warnings = "".join(f"  warning:   {line}\n" for line in snapshot.script_warnings())
            return (
                f"\napproval needed: {snapshot.tool_name} (approval {approval.approval_id})\n"
                f"  arguments: {arguments_json(snapshot.arguments, indent=None)}\n"
                f"{warnings}"
                f"  digest:    {snapshot.digest}\n"
                f"  expires:   {_expiry(approval)}"
            )
        case ApprovalDecided(approval=approval):
            who = approval.decider or approval.revoked_by or "the service"
            return f"{approval.tool_name}: {approval.status} by {who}"
        case ApprovalUpdated(view=view):
            voters = ", ".join(view.voters) or "nobody yet"
            return (
                f"{view.approval.tool_name}: {view.approvals_count} of {view.required} "
                f"approvals ({voters}); digest {view.approval.arguments_digest}"
            )
        case ApprovalReminder(approval=approval):
            return (
                f"reminder: {approval.tool_name} ({approval.approval_id}) expires "
                f"{_expiry(approval)}"
            )
        case ApprovalExpired(approval=approval):
            return f"{approval.tool_name} ({approval.approval_id}) expired: nobody decided in time"
        case ExecutionRefused(approval=approval, reason=reason):
            return f"{approval.tool_name} ({approval.approval_id}) was not run: {reason}"
        case CallUncertain(call=call):
            return (
                f"uncertain: {call.tool_name} (execution key {call.execution_key}) may or may "
                "not have taken effect; check the downstream system and reconcile it"
            )
        case RunFinished(final_output=final_output, status=status):
            suffix = "" if status == "completed" else f" ({status})"
            return f"\nanswer{suffix}:\n{final_output or '(no answer)'}"
        case RunFailed(error=error):
            return f"\nrun failed: {error}"
        case ResumeStalled(attempts=attempts):
            return (
                f"the database failed {attempts} times while resuming; retrying in the background"
            )


def _expiry(approval: ApprovalRecord) -> str:
    return approval.expires_at.isoformat() if approval.expires_at else "never"
