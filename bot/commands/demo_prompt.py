"""A decision in the terminal demo: asked at the prompt (a/approve/y/yes, r/reject/n/no, a
reason, on reject a message for the agent), or given by the flags for scripts.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bot.commands.session import prompt
from store.records import ApprovalRecord

DEFAULT_REASON = "decided in the approvals-bot terminal demo"


@dataclass(frozen=True, kw_only=True)
class Choice:
    approve: bool
    reason: str
    message: str | None


def flag_choice(args: argparse.Namespace) -> Choice | None:
    if not (args.approve or args.reject):
        return None
    return Choice(
        approve=bool(args.approve),
        reason=args.reason or DEFAULT_REASON,
        message=args.message if args.reject else None,
    )


APPROVE_WORDS = ("a", "approve", "y", "yes")


REJECT_WORDS = ("r", "reject", "n", "no")


def ask(approval: ApprovalRecord) -> Choice:
    answer = _prompt(f"approve or reject {approval.tool_name}? [a/r] ").lower()
    while answer not in APPROVE_WORDS + REJECT_WORDS:
        answer = _prompt("please answer a or y (approve), r or n (reject): ").lower()
    approve = answer in APPROVE_WORDS
    reason = _prompt("reason (audit only): ")
    while not reason:
        reason = _prompt("a reason is required: ")
    message = None if approve else (_prompt("message to the agent (optional): ") or None)
    return Choice(approve=approve, reason=reason, message=message)


def _prompt(question: str) -> str:
    return prompt(
        question,
        missing="no decision on standard input; pass --approve or --reject for a "
        "non-interactive run",
    )
