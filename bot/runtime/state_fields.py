"""Reading a RunState payload field by field, and checking the fields fit together.

Loading is the hot path of resuming: each check is a plain type test made once, and the
check that fails raises the RunStateError naming the field (`history[3].tool_calls[0].id`,
`pending_calls[1].status`). `check_consistency` then checks what no single field can say:
pending calls are the unanswered calls of the last model turn (same tool, arguments and
execution key), decisions fit their call, and legacy digests name only such calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any, NoReturn, cast

from bot.canonical import DIGEST_KEY_BYTES, canonical_arguments
from bot.errors import InputError, RunStateError
from bot.runtime.decisions import (
    AbortCall,
    ApprovalMetadata,
    ApprovedCall,
    Decision,
    PendingCall,
    RejectedCall,
    RetryCall,
    VerifiedResult,
    execution_key,
)
from bot.runtime.model import Item, unanswered_calls

_TYPE_NAMES = {str: "a string", int: "an integer", list: "an array", dict: "an object"}
_STATUSES = ("approval", "uncertain")  # a tuple: `in` on an unhashable value is just False


def refuse(path: str, expected: str, value: Any) -> NoReturn:
    raise RunStateError(f"RunState field {path!r} must be {expected}, got {type(value).__name__}")


def typed(value: Any, kind: type, path: str) -> Any:
    if type(value) is not kind:
        refuse(path, _TYPE_NAMES[kind], value)
    return value


def count(value: Any, path: str, *, minimum: int) -> int:
    if type(value) is not int:
        refuse(path, "an integer", value)
    if value < minimum:
        raise RunStateError(f"RunState field {path!r} must be at least {minimum}, got {value}")
    return value


def optional_str(value: Any, path: str) -> str | None:
    return None if value is None else cast(str, typed(value, str, path))


def read_digest_key(value: Any) -> bytes:
    text = typed(value, str, "digest_key")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != DIGEST_KEY_BYTES or len(text) != 2 * DIGEST_KEY_BYTES:
        raise RunStateError(
            f"RunState field 'digest_key' must be {DIGEST_KEY_BYTES} bytes as hex "
            f"({2 * DIGEST_KEY_BYTES} characters)"
        )
    return key


def read_legacy_calls(value: Any) -> set[str]:
    items = typed(value, list, "legacy_digest_calls")
    for index, item in enumerate(items):
        typed(item, str, f"legacy_digest_calls[{index}]")
    return set(items)


class _BadItem(Exception):
    """A history item failed a check: the field (relative to the item) and what it must be."""

    def __init__(self, field: str, expected: str, value: Any) -> None:
        super().__init__(field)
        self.field, self.expected, self.value = field, expected, value


def read_history(value: Any, path: str = "history") -> list[Item]:
    """The history items, checked in one pass without copies; the first bad field is
    named by its path."""
    items = typed(value, list, path)
    item: Any = None
    try:
        for item in items:
            kind = item["type"]
            if kind == "tool_result":
                if type(item["tool_call_id"]) is not str:
                    raise _BadItem("tool_call_id", "a string", item["tool_call_id"])
                if type(item["name"]) is not str:
                    raise _BadItem("name", "a string", item["name"])
                if type(item["content"]) is not str:
                    raise _BadItem("content", "a string", item["content"])
                if type(item["is_error"]) is not bool:
                    raise _BadItem("is_error", "a boolean", item["is_error"])
            elif kind == "assistant":
                content = item["content"]
                if content is not None and type(content) is not str:
                    raise _BadItem("content", "a string or null", content)
                _check_calls(item["tool_calls"])
            elif kind != "user":
                raise _BadItem("type", "user, assistant or tool_result", kind)
            elif type(item["content"]) is not str:
                raise _BadItem("content", "a string", item["content"])
    except _BadItem as bad:
        refuse(f"{path}[{_index(items, item)}].{bad.field}", bad.expected, bad.value)
    except TypeError:  # item["type"] of something that is not an object
        refuse(f"{path}[{_index(items, item)}]", "an object", item)
    except KeyError as missing:
        where = f"{path}[{_index(items, item)}].{missing.args[0]}"
        raise RunStateError(f"RunState field {where!r} is missing") from None
    return cast(list[Item], items)


def _check_calls(calls: Any) -> None:
    """_BadItem unless `calls` is an assistant turn's list of tool calls."""
    if type(calls) is not list:
        raise _BadItem("tool_calls", "an array", calls)
    for call in calls:
        if (
            type(call) is not dict
            or type(call.get("id")) is not str
            or type(call.get("name")) is not str
            or type(call.get("arguments")) is not dict
        ):
            raise _BadItem(
                f"tool_calls[{_index(calls, call)}]",
                "an object with a string id and name and an object of arguments",
                call,
            )


def _index(items: list[Any], item: Any) -> int:
    return next(index for index, candidate in enumerate(items) if candidate is item)


def read_pending(items: list[Any]) -> dict[str, PendingCall]:
    """Pending calls by tool call id, in the model's order."""
    calls: dict[str, PendingCall] = {}
    for index, data in enumerate(items):
        if type(data) is not dict:
            refuse(f"pending_calls[{index}]", "an object", data)
        call_id, name, arguments, key, status = (
            data.get("tool_call_id"),
            data.get("tool_name"),
            data.get("arguments"),
            data.get("execution_key"),
            data.get("status"),
        )
        if type(call_id) is not str:
            refuse(f"pending_calls[{index}].tool_call_id", "a string", call_id)
        if status not in _STATUSES:
            refuse(f"pending_calls[{index}].status", "approval or uncertain", status)
        if type(name) is not str:
            refuse(f"pending_calls[{index}].tool_name", "a string", name)
        if type(arguments) is not dict:
            refuse(f"pending_calls[{index}].arguments", "an object", arguments)
        if type(key) is not str:
            refuse(f"pending_calls[{index}].execution_key", "a string", key)
        calls[call_id] = PendingCall(
            tool_call_id=call_id,
            tool_name=name,
            arguments=arguments,
            execution_key=key,
            status=status,
        )
    return calls


def read_decisions(value: Any, path: str) -> dict[str, Decision]:
    items = typed(value, dict, path)
    return {key: _read_decision(item, f"{path}.{key}") for key, item in items.items()}


def _read_decision(value: Any, path: str) -> Decision:
    data = typed(value, dict, path)
    kind = data.get("kind")
    if kind == "approved":
        return ApprovedCall()
    if kind == "rejected":
        return RejectedCall(message=typed(data.get("message"), str, f"{path}.message"))
    if kind == "verified_result":
        return VerifiedResult(result=typed(data.get("result"), str, f"{path}.result"))
    if kind == "retry":
        return RetryCall()
    if kind == "abort":
        return AbortCall()
    raise RunStateError(f"RunState field '{path}.kind' is not a known decision: {kind!r}")


def read_metadata(value: Any) -> dict[str, ApprovalMetadata]:
    items = typed(value, dict, "approval_metadata")
    metadata: dict[str, ApprovalMetadata] = {}
    for key, item in items.items():
        path = f"approval_metadata.{key}"
        data = typed(item, dict, path)
        metadata[key] = ApprovalMetadata(
            approver_id=optional_str(data.get("approver_id"), f"{path}.approver_id"),
            reason=optional_str(data.get("reason"), f"{path}.reason"),
            timestamp=_read_timestamp(data.get("timestamp"), f"{path}.timestamp"),
        )
    return metadata


def _read_timestamp(value: Any, path: str) -> datetime:
    try:
        moment = datetime.fromisoformat(typed(value, str, path))
    except ValueError as error:
        raise RunStateError(f"RunState field {path!r} is not an ISO timestamp") from error
    # Naive timestamps only come from legacy builds, which wrote UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def check_consistency(
    *,
    run_id: str,
    history: list[Item],
    pending: Mapping[str, PendingCall],
    decisions: Mapping[str, Decision],
    always: Mapping[str, Decision],
    legacy_digest_calls: AbstractSet[str],
) -> None:
    """Pending calls must be unanswered calls of the last turn, with the same tool,
    arguments and execution key; decisions must fit their call's status; legacy
    digests only for unanswered calls of the last turn."""
    if not (pending or decisions or always or legacy_digest_calls):
        return
    turn, unanswered = unanswered_calls(history)
    by_id = {call["id"]: call for call in unanswered}
    strangers = sorted(legacy_digest_calls - by_id.keys())
    if strangers:
        raise RunStateError(
            f"legacy_digest_calls names {', '.join(strangers)}, not unanswered calls of "
            "the run's last model turn"
        )
    for call in pending.values():
        asked = by_id.get(call.tool_call_id)
        if asked is None:
            raise RunStateError(
                f"pending call {call.tool_call_id} is not an unanswered call of the "
                "run's last model turn"
            )
        if (
            asked["name"] != call.tool_name
            or not _same_arguments(asked["arguments"], call.arguments)
            or execution_key(run_id, turn, call.tool_call_id) != call.execution_key
        ):
            raise RunStateError(
                f"pending call {call.tool_call_id} does not match the model turn that "
                "asked for it (tool, arguments or execution key differ)"
            )
    for call_id, decision in decisions.items():
        target = pending.get(call_id)
        if target is None:
            raise RunStateError(f"a decision names {call_id}, which is not pending")
        if isinstance(decision, ApprovedCall | RejectedCall) != (target.status == "approval"):
            raise RunStateError(
                f"decision {decision.kind!r} does not fit call {call_id} ({target.status})"
            )
    for tool_name, rule in always.items():
        if not isinstance(rule, ApprovedCall | RejectedCall):
            raise RunStateError(f"always-rule of {tool_name} must be approved or rejected")


def _same_arguments(asked: dict[str, Any], pending: dict[str, Any]) -> bool:
    """Equal as canonical JSON, the form the approver's digest covers: Python's `==`
    alone takes 1, 1.0 and True for the same value."""
    if asked != pending:
        return False
    try:
        return canonical_arguments(asked) == canonical_arguments(pending)
    except InputError:
        return False
