"""How a call reaches its approvers: where its card goes, how far it escalates, and how
the requester hears the outcome (the routing keys of a tool's rule).

These keys sit in the same `[defaults]` and `[tools.<name>]` tables as the rest of a
rule, and are read here, apart from the keys that say who may decide:

    notify = "both"             # "channel" (default) | "dm" | "both": where the card goes
    max_dms = 10                # at most this many direct messages per call (default 10)
    escalate_after = "30m"      # nobody decided by then: these become eligible and are told
    escalate_to = ["S0ONCALL"]  # user ids and user group ids
    notify_requester = "dm"     # "thread" (default) | "dm": the outcome by DM too

Several escalation steps are an array of tables instead of the two `escalate_*` keys:

    escalation = [
      { after = "30m", to = ["S0ONCALL"] },
      { after = "2h", to = ["U0CTO"] },
    ]

Each step's time counts from the request. A step widens who may decide (the step's
people are eligible from its time on, as the tool's approvers are) and is told; the
expiry still ends the call, so a step at or after `expires_after` is a problem (it could
never fire).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Literal, get_args

from bot.policy.durations import format_duration, parse_duration

Notify = Literal["channel", "dm", "both"]
NotifyRequester = Literal["thread", "dm"]
NOTIFY_MODES: tuple[str, ...] = get_args(Notify)
REQUESTER_MODES: tuple[str, ...] = get_args(NotifyRequester)
DEFAULT_MAX_DMS = 10
MAX_DMS_CEILING = 100  # a card sent to more people than this is a broadcast: mention a group
MAX_ESCALATION_STEPS = 5
ROUTING_KEYS = frozenset(
    {"notify", "max_dms", "escalate_after", "escalate_to", "escalation", "notify_requester"}
)


@dataclass(frozen=True, kw_only=True)
class EscalationStep:
    """After `after` (from the request) with nobody's decision, `to` may decide too."""

    after: timedelta
    to: tuple[str, ...]  # user ids and user group ids


@dataclass(frozen=True, kw_only=True)
class Routing:
    """Where a tool's card goes and how far it reaches; the defaults change nothing."""

    notify: Notify = "channel"
    max_dms: int = DEFAULT_MAX_DMS
    escalation: tuple[EscalationStep, ...] = field(default=())
    notify_requester: NotifyRequester = "thread"

    @property
    def sends_dms(self) -> bool:
        return self.notify != "channel"

    @property
    def decided_in_channel(self) -> bool:
        """Whether the thread's card carries the deciding buttons (not with "dm", where
        they are in the direct messages and App Home)."""
        return self.notify != "dm"


Fail = Callable[[str, str], None]
"""Reports a problem: (key, problem)."""
ReadIds = Callable[[object, str], list[str]]
"""Reads a list of Slack user and group ids at a key, reporting its problems."""


def read_routing(
    table: Mapping[str, Any], base: Routing, prefix: str, *, fail: Fail, ids: ReadIds
) -> Routing:
    """`base` with the routing keys `table` sets (each problem reported with `fail`)."""
    routing = base
    notify = _choice(table, "notify", NOTIFY_MODES, prefix, fail)
    if notify is not None:
        routing = replace(routing, notify=notify)  # type: ignore[arg-type]
    told = _choice(table, "notify_requester", REQUESTER_MODES, prefix, fail)
    if told is not None:
        routing = replace(routing, notify_requester=told)  # type: ignore[arg-type]
    if "max_dms" in table:
        value = table["max_dms"]
        if type(value) is not int or not 1 <= value <= MAX_DMS_CEILING:
            fail(f"{prefix}.max_dms", f"must be a whole number from 1 to {MAX_DMS_CEILING}")
        else:
            routing = replace(routing, max_dms=value)
    steps = _escalation(table, prefix, fail, ids)
    return routing if steps is None else replace(routing, escalation=steps)


def check_routing(
    routing: Routing,
    table: Mapping[str, Any],
    prefix: str,
    *,
    approvers: tuple[str, ...],
    expires_after: timedelta | None,
    fail: Fail,
) -> None:
    """Routing that could never work as written, reported where it is written."""
    if routing.sends_dms and not approvers and ("notify" in table or "approvers" in table):
        fail(
            f"{prefix}.notify",
            f'"{routing.notify}" sends the card to the tool\'s approvers, but anyone may '
            "approve it (approvers = []): name the approvers, or notify the channel",
        )
    written = ROUTING_KEYS & set(table) or "expires_after" in table
    if not written or expires_after is None:
        return
    for number, step in enumerate(routing.escalation, start=1):
        if step.after >= expires_after:
            fail(
                f"{prefix}.escalation",
                f"step {number} comes after {format_duration(step.after)}, but the call "
                f"expires after {format_duration(expires_after)}: it could never fire",
            )


def _choice(
    table: Mapping[str, Any], key: str, allowed: tuple[str, ...], prefix: str, fail: Fail
) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if value not in allowed:
        fail(f"{prefix}.{key}", f"must be one of {', '.join(repr(a) for a in allowed)}")
        return None
    return str(value)


def _escalation(
    table: Mapping[str, Any], prefix: str, fail: Fail, ids: ReadIds
) -> tuple[EscalationStep, ...] | None:
    """The escalation steps `table` writes (None: it writes none, the base's stand)."""
    short = "escalate_after" in table or "escalate_to" in table
    if short and "escalation" in table:
        fail(
            f"{prefix}.escalation",
            "write one step with escalate_after and escalate_to, or several with "
            "escalation = [...], not both",
        )
        return None
    if short:
        if "escalate_after" not in table or "escalate_to" not in table:
            missing = "escalate_to" if "escalate_after" in table else "escalate_after"
            fail(f"{prefix}.{missing}", "escalate_after and escalate_to go together")
            return None
        step = _step(table["escalate_after"], table["escalate_to"], prefix, fail, ids)
        return None if step is None else (step,)
    if "escalation" not in table:
        return None
    return _steps(table["escalation"], f"{prefix}.escalation", fail, ids)


def _steps(value: object, key: str, fail: Fail, ids: ReadIds) -> tuple[EscalationStep, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        fail(key, 'must be a list of tables: [{ after = "30m", to = ["S0ONCALL"] }, ...]')
        return None
    if len(value) > MAX_ESCALATION_STEPS:
        fail(key, f"at most {MAX_ESCALATION_STEPS} steps")
        return None
    steps: list[EscalationStep] = []
    for number, item in enumerate(value, start=1):
        where = f"{key}[{number}]"
        unknown = sorted(set(item) - {"after", "to"})
        if unknown or "after" not in item or "to" not in item:
            fail(where, "each step is { after = <duration>, to = [<Slack ids>] } and nothing else")
            return None
        step = _step(item["after"], item["to"], where, fail, ids, after_key="after", to_key="to")
        if step is None:
            return None
        if steps and step.after <= steps[-1].after:
            fail(where, "each step must come later than the one before")
            return None
        steps.append(step)
    return tuple(steps)


def _step(
    after: object,
    to: object,
    prefix: str,
    fail: Fail,
    ids: ReadIds,
    *,
    after_key: str = "escalate_after",
    to_key: str = "escalate_to",
) -> EscalationStep | None:
    try:
        duration = parse_duration(after)
    except ValueError as error:
        fail(f"{prefix}.{after_key}", str(error))
        return None
    people = ids(to, f"{prefix}.{to_key}")
    if not people:
        if isinstance(to, list) and not to:
            fail(f"{prefix}.{to_key}", "names nobody to escalate to")
        return None
    return EscalationStep(after=duration, to=tuple(people))
