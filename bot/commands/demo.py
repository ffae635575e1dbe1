"""`approvals-bot demo "<task>"`: an agent in the terminal, through the real service.

The demo is the bot without Slack: the same ApprovalService, store (runs, approvals,
audit events and ledger in `./approvals.db` by default), runtime and agents (the ops
agent, or `--agent NAME` from APPROVALS_AGENTS), under the same policy
(APPROVALS_POLICY, else the defaults with APPROVALS_APPROVAL_TTL_SECONDS), with a
notifier that prints to the terminal. Each pending call is shown redacted with its
argument digest; the decision is asked at the prompt (a/approve/y/yes, r/reject/n/no),
or given by flags for scripts. The run's requester is `demo-requester`, so the default
approver (you) may decide.

Its runs are terminal runs (origin "terminal"): the Slack bot on the same database
neither lists nor decides them. Ctrl-C at a prompt quits at once, leaving the run
paused, with one line saying how to finish it: `approvals-bot approvals decide`; so
does a demo that stops without a decision (nothing on stdin, a decision the policy
refuses).
Prompts are read between the service's steps, outside the event loop
(bot.commands.session), which is what lets Ctrl-C through.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from bot.commands.database import os_user
from bot.commands.demo_progress import Progress, finish_line, interrupted_line, needs_others
from bot.commands.demo_prompt import DEFAULT_REASON, ask, flag_choice
from bot.commands.demo_service import open_service
from bot.commands.groups import add_groups_option, unknown_groups_note
from bot.commands.session import Session
from bot.errors import (
    AlreadyDecidedError,
    ApprovalsError,
    InputError,
    NotAuthorizedError,
    RunStateError,
)
from bot.policy.eligibility import StaticGroups
from bot.service import ApprovalService, DecisionResult
from store.records import ApprovalRecord, RunRecord

DEMO_REQUESTER = "demo-requester"

HELP = """\
Run the ops agent (or --agent NAME) on TASK in the terminal, through the same service,
store, policy and audit trail as the Slack bot. The offline model understands: deploy
<service> <version>, restart <service>, set <service> <key>=<value>, status <service>,
joined by "and"; another task is refused (exit code 2).

Each call that needs approval is printed with its redacted arguments (characters that
hide or reorder text shown as escapes such as \\u202e, words mixing scripts flagged)
and the call's keyed digest; you approve (a, y) or reject (r, n) it with a reason (the
reason is audit only; on reject, the message is what the agent sees). The run is
requested by "demo-requester", so you, the approver, may decide (a policy that names
approvers needs --approver with one of their ids; where it names Slack user groups,
--groups-from FILE names their members, as Slack is not asked). Ctrl-C at a prompt, or a
stop without a decision, leaves the run paused and prints the `approvals-bot approvals
decide` command that finishes it.

Secrets never enter the stored state: the ops tools read OPS_API_TOKEN as a runtime
dependency, and a run context (--context-json) holding a credential-looking value is
refused (exit code 2) with the path of the offending field.

Environment: APPROVALS_DATABASE_URL (default ./approvals.db), APPROVALS_KEYS (default a
key file beside the database), APPROVALS_POLICY, APPROVALS_AGENTS,
APPROVALS_APPROVAL_TTL_SECONDS, APPROVALS_DEMO_EFFECTS (effects file, default
./demo-effects.jsonl), OPS_API_TOKEN, OPS_DEMO_LATENCY, APPROVALS_MODEL (offline, the
default, or openai with OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL).

examples:
  approvals-bot demo "deploy payments 1.2.3"
  approvals-bot demo "deploy payments 1.2.3" --approve --reason "CR-42"
  approvals-bot demo "restart api" --reject --message "not during business hours" \\
      --reason "change freeze"
  approvals-bot demo "status api" --context-json '{"tenant": "acme"}'
  PYTHONPATH=. APPROVALS_AGENTS=examples.billing:registry \\
      approvals-bot demo --agent billing "refund order 1042 2500"
"""


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run an agent in the terminal, with approvals at the prompt",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("task", help='what the agent should do, e.g. "deploy payments 1.2.3"')
    parser.add_argument(
        "--agent", default=None, help="the agent to run (default: ops; see APPROVALS_AGENTS)"
    )
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
        help="write the paused run state JSON to this file (owner-only; in clear: it holds "
        "the tool arguments and the run's digest key, but never the token or a credential "
        "from the context)",
    )
    parser.add_argument(
        "--db",
        default=None,
        help="database path or sqlite:///path "
        "(default: $APPROVALS_DATABASE_URL, else ./approvals.db)",
    )
    add_groups_option(parser)
    parser.add_argument(
        "--context-json",
        default=None,
        help="run context as a JSON object, stored with the run (secrets are refused)",
    )
    parser.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    if args.message is not None and args.approve:
        raise InputError("--message goes with --reject (it is what the agent is told)")
    if args.state is not None:
        _check_state_path(args.state)
    context = parse_context(args.context_json)
    progress = Progress()
    _let_ctrl_c_interrupt()
    try:
        with Session() as session:
            return _demo(session, args, context, progress)
    except KeyboardInterrupt:
        print(interrupted_line(progress, args), file=sys.stderr, flush=True)
        return 130
    except ApprovalsError as error:  # no answer on stdin, a decision the policy refused
        finish = finish_line(progress, args)
        if finish is not None:
            error.add_note(finish)  # the CLI prints it under the error
        raise


def _let_ctrl_c_interrupt() -> None:
    """Ctrl-C quits the demo at its prompt even when the shell that started it ignores
    SIGINT (a job started with `&` by a script does, and Python then installs no handler)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _check_state_path(path: Path) -> None:
    if path.is_dir():
        raise InputError(f"--state {path} is a directory; name the file to write")
    if not path.parent.is_dir():
        raise InputError(f"--state {path}: the directory {path.parent} does not exist")


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


def _demo(
    session: Session, args: argparse.Namespace, context: dict[str, Any] | None, progress: Progress
) -> int:
    service, agent_name, groups = session.enter(open_service(args))
    progress.run = session.run(
        service.start_run(
            agent_name=agent_name,
            task=args.task,
            requester=DEMO_REQUESTER,
            channel=None,
            context=context,
        )
    )
    approver = args.approver or os_user()
    counted: dict[str, DecisionResult] = {}  # votes on calls that need more people
    while True:
        session.run(service.drain())
        run = progress.run = session.run(_reload(service, progress.run.run_id))
        pending = session.run(service.store.list_approvals(run_id=run.run_id, status="pending"))
        if run.status != "paused" or not pending:
            break  # finished, or uncertain calls wait for reconciliation (the notifier said)
        if args.state is not None:
            state = session.run(service.load_state(run.run_id))
            _write_private(args.state, state.to_json())
            print(f"paused state written to {args.state}")
        progress.waiting = [approval.approval_id for approval in pending]
        undecided = [approval for approval in pending if approval.approval_id not in counted]
        if not undecided:  # what is left needs other people's votes besides this one
            raise InputError(needs_others(next(iter(counted.values()))))
        for approval in undecided:
            result = _decide_one(session, service, approval, approver, groups, args)
            if result is not None and result.approval.status == "pending":
                counted[approval.approval_id] = result
            else:
                progress.waiting.remove(approval.approval_id)
    return 0 if run.status == "completed" else 1


def _decide_one(
    session: Session,
    service: ApprovalService,
    approval: ApprovalRecord,
    approver: str,
    groups: StaticGroups,
    args: argparse.Namespace,
) -> DecisionResult | None:
    """`approver`'s decision on one call, asked or from the flags (None: it expired at
    the prompt, and the run goes on without it)."""
    choice = flag_choice(args) or ask(approval)
    try:
        return session.run(
            service.decide(
                approval.approval_id,
                approve=choice.approve,
                decider=approver,
                reason=choice.reason,
                message=choice.message,
                digest=approval.arguments_digest,  # the digest shown above
            )
        )
    except AlreadyDecidedError as error:
        print(f"approvals-bot: {error}", file=sys.stderr, flush=True)
        return None
    except NotAuthorizedError as error:
        rule = service.policy.rule_for(approval.tool_name)
        note = unknown_groups_note(rule, approver, groups, slack_possible=False)
        if note is not None:
            error.add_note(note)
        raise


async def _reload(service: ApprovalService, run_id: str) -> RunRecord:
    current = await service.store.get_run(run_id)
    if current is None:
        raise RunStateError(f"run {run_id} disappeared from the database")
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
