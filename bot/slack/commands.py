"""Slash commands, parsed into small frozen records the listeners act on (pure).

    /agent [help]
    /agent [@name | agent=name] <task>
    /approvals [help]
    /approvals list [page]
    /approvals show ID
    /approvals revoke ID [reason]
    /approvals audit ID
    /approvals reconcile ID result <text> | retry | abort
    /approvals cancel RUN [reason]
    /approvals away until DATE [stand-in @person]
    /approvals back

Bad syntax raises InputError naming what is wrong; the listener answers it (with the
help) before touching the service. `/approvals reconcile` parses into the runtime's
`Resolution`, as the reconcile modal does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.errors import InputError
from bot.runtime import AbortCall, Resolution, RetryCall, VerifiedResult
from bot.slack.modals import check_approval_id, optional_text, text_field
from bot.slack.reconcile_modal import MAX_RESULT_CHARS

_AGENT_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class SlashCommand:
    command: str
    text: str
    user_id: str
    channel_id: str
    trigger_id: str | None
    response_url: str | None  # answers here reach the person even where the bot is no member


def parse_slash_command(body: Mapping[str, Any]) -> SlashCommand:
    return SlashCommand(
        command=text_field(body, "command"),
        text=str(body.get("text") or "").strip(),
        user_id=text_field(body, "user_id"),
        channel_id=text_field(body, "channel_id"),
        trigger_id=optional_text(body, "trigger_id"),
        response_url=optional_text(body, "response_url"),
    )


# -- /agent ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AgentTask:
    """`/agent [@name | agent=name] <task>`; `agent_name` None means the default agent."""

    agent_name: str | None
    task: str


@dataclass(frozen=True, kw_only=True)
class AgentHelp:
    pass


AgentCommand = AgentTask | AgentHelp


def parse_agent_command(text: str) -> AgentCommand:
    """`help` or nothing -> AgentHelp; `@ops task` / `agent=ops task` pick an agent."""
    text = text.strip()
    if text.lower() in ("", "help"):
        return AgentHelp()
    head, _, rest = text.partition(" ")
    agent_name: str | None = None
    if head.startswith("@") and not head.startswith("@<"):
        agent_name = head[1:]
    elif head.lower().startswith("agent="):
        agent_name = head[len("agent=") :]
    if agent_name is None:
        return AgentTask(agent_name=None, task=text)
    if not _AGENT_NAME.fullmatch(agent_name):
        raise InputError(
            f"{agent_name[:70]!r} is not an agent name (letters, digits, '.', '_' or '-', up to 64)"
        )
    task = rest.strip()
    if not task:
        raise InputError(f"tell agent {agent_name!r} what to do: /agent @{agent_name} <task>")
    return AgentTask(agent_name=agent_name, task=task)


# -- /approvals --------------------------------------------------------------------------

MAX_REVOKE_REASON_CHARS = 2000

USAGE = {
    "list": "`/approvals list [page]`",
    "show": "`/approvals show ID`",
    "revoke": "`/approvals revoke ID [reason]`",
    "audit": "`/approvals audit ID`",
    "reconcile": "`/approvals reconcile ID result <text> | retry | abort`",
    "cancel": "`/approvals cancel RUN [reason]`",
    "away": "`/approvals away until 2026-12-24 [stand-in @person]`",
    "back": "`/approvals back`",
}


@dataclass(frozen=True, kw_only=True)
class ApprovalsHelp:
    pass


@dataclass(frozen=True, kw_only=True)
class ApprovalsList:
    page: int = 1


@dataclass(frozen=True, kw_only=True)
class ApprovalsShow:
    approval_id: str


@dataclass(frozen=True, kw_only=True)
class ApprovalsRevoke:
    approval_id: str
    reason: str | None


@dataclass(frozen=True, kw_only=True)
class ApprovalsAudit:
    approval_id: str


@dataclass(frozen=True, kw_only=True)
class ApprovalsCancel:
    run_id: str
    reason: str | None


@dataclass(frozen=True, kw_only=True)
class ApprovalsReconcile:
    approval_id: str
    resolution: Resolution


@dataclass(frozen=True, kw_only=True)
class ApprovalsAway:
    """Away until `until` (UTC), `stand_in` deciding in their place (None: nobody)."""

    until: datetime
    stand_in: str | None


@dataclass(frozen=True, kw_only=True)
class ApprovalsBack:
    pass


ApprovalsCommand = (
    ApprovalsHelp
    | ApprovalsAway
    | ApprovalsBack
    | ApprovalsList
    | ApprovalsShow
    | ApprovalsRevoke
    | ApprovalsAudit
    | ApprovalsReconcile
    | ApprovalsCancel
)


def parse_approvals_command(text: str) -> ApprovalsCommand:
    words = text.strip().split(maxsplit=1)
    if not words or words[0].lower() == "help":
        return ApprovalsHelp()
    verb = words[0].lower()
    rest = words[1].strip() if len(words) > 1 else ""
    if verb == "list":
        return ApprovalsList(page=_page(rest))
    if verb == "away":
        return parse_away(rest)
    if verb == "back":
        if rest:
            raise InputError(f"`back` takes nothing after it; usage: {USAGE['back']}")
        return ApprovalsBack()
    if verb not in USAGE:
        raise InputError(f"unknown /approvals sub-command {words[0][:40]!r}")
    approval_id, _, tail = rest.partition(" ")
    approval_id = _approval_id(verb, approval_id)
    tail = tail.strip()
    if verb == "show":
        _nothing_more(verb, tail)
        return ApprovalsShow(approval_id=approval_id)
    if verb == "audit":
        _nothing_more(verb, tail)
        return ApprovalsAudit(approval_id=approval_id)
    if verb in ("revoke", "cancel"):
        if len(tail) > MAX_REVOKE_REASON_CHARS:
            raise InputError(f"keep the reason under {MAX_REVOKE_REASON_CHARS} characters")
        if verb == "cancel":
            return ApprovalsCancel(run_id=approval_id, reason=tail or None)
        return ApprovalsRevoke(approval_id=approval_id, reason=tail or None)
    return ApprovalsReconcile(approval_id=approval_id, resolution=parse_resolution(tail))


def parse_resolution(text: str) -> Resolution:
    """`result <text>`, `retry` or `abort` (the tail of `/approvals reconcile ID …`)."""
    head, _, rest = text.strip().partition(" ")
    kind = head.lower()
    rest = rest.strip()
    if kind == "result":
        if not rest:
            raise InputError(
                "say what the call really did: `/approvals reconcile ID result <text>`"
            )
        if len(rest) > MAX_RESULT_CHARS:
            raise InputError(f"keep the result under {MAX_RESULT_CHARS} characters")
        return VerifiedResult(result=rest)
    if kind in ("retry", "abort") and rest:
        raise InputError(f"`{kind}` takes nothing after it; usage: {USAGE['reconcile']}")
    if kind == "retry":
        return RetryCall()
    if kind == "abort":
        return AbortCall()
    shown = f"{head[:40]!r}" if head else "nothing"
    raise InputError(
        f"reconcile needs `result <text>`, `retry` or `abort`, got {shown}; "
        f"usage: {USAGE['reconcile']}"
    )


_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,30})(?:\|[^>]*)?>|([UW][A-Z0-9]{2,30})")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?")
_TIME = re.compile(r"\d{2}:\d{2}")
_STAND_IN_WORDS = ("stand-in", "standin")


def parse_away(text: str) -> ApprovalsAway:
    """`until DATE [stand-in @person]`: DATE is `2026-12-24` (away until that day
    begins, UTC) or `2026-12-24 09:00` (UTC); the stand-in is a mention, which Slack
    sends as the person's id (`<@U…|name>`), or a user id."""
    words = text.split()
    if [word.lower() for word in words[:1]] != ["until"] or len(words) < len(["until", "DATE"]):
        raise InputError(f"say until when you are away; usage: {USAGE['away']}")
    with_time = len(words) > 2 and _TIME.fullmatch(words[2]) is not None
    until = _until(" ".join(words[1 : 3 if with_time else 2]))
    rest = words[3 if with_time else 2 :]
    if not rest:
        return ApprovalsAway(until=until, stand_in=None)
    if rest[0].lower() not in _STAND_IN_WORDS or len(rest) != len(["stand-in", "@person"]):
        raise InputError(f"unexpected {' '.join(rest)[:60]!r}; usage: {USAGE['away']}")
    found = _MENTION.fullmatch(rest[1])
    if found is None:
        raise InputError(
            f"{rest[1][:40]!r} does not name a person: mention them (@name, picked from the "
            "list, so that Slack sends their id) or give their Slack user id"
        )
    return ApprovalsAway(until=until, stand_in=found.group(1) or found.group(2))


def _until(text: str) -> datetime:
    found = _DATE.fullmatch(text)
    if found is None:
        raise InputError(f"{text[:40]!r} is not a date; write 2026-12-24 or 2026-12-24T09:00 (UTC)")
    try:
        return datetime.fromisoformat(f"{found.group(1)}T{found.group(2) or '00:00'}").replace(
            tzinfo=UTC
        )
    except ValueError:
        raise InputError(f"{text[:40]!r} is not a date of the calendar") from None


def _page(text: str) -> int:
    if not text:
        return 1
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise InputError(f"the page must be a number from 1, got {text[:40]!r}")
    return int(text)


def _approval_id(verb: str, value: str) -> str:
    if not value:
        what = "a run id" if verb == "cancel" else "an approval id"
        raise InputError(f"`{verb}` needs {what}; usage: {USAGE[verb]}")
    return check_approval_id(value)


def _nothing_more(verb: str, tail: str) -> None:
    if tail:
        raise InputError(f"unexpected {tail[:40]!r} after the id; usage: {USAGE[verb]}")
