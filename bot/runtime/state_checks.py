"""Validation of RunState contents: typed field reads with the field's path in the
error, history items, and the integrity between pending calls, decisions and history.

Loading is the hot path of resuming, so the checks of valid data take few calls; the
careful walks that name a bad field run only once something is known to be wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from bot.errors import InputError, RunStateError
from bot.runtime.decisions import ApprovedCall, Decision, PendingCall, RejectedCall
from bot.runtime.digest import canonical_arguments, execution_key
from bot.runtime.model import Item, ToolCallItem


def bad_field(path: str, expected: str, value: Any) -> RunStateError:
    return RunStateError(f"RunState field {path!r} must be {expected}, got {type(value).__name__}")


def read_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise bad_field(path, "a string", value)
    return value


def read_opt_str(value: Any, path: str) -> str | None:
    return None if value is None else read_str(value, path)


def read_int(value: Any, path: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_field(path, "an integer", value)
    if value < minimum:
        raise RunStateError(f"RunState field {path!r} must be at least {minimum}, got {value}")
    return value


def read_dict(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_field(path, "an object", value)
    return value


def read_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise bad_field(path, "an array", value)
    return value


def read_required(payload: dict[str, Any], key: str) -> Any:
    if key not in payload:
        raise RunStateError(f"RunState payload lacks the required field {key!r}")
    return payload[key]


# -- history --------------------------------------------------------------------------


def check_history(value: Any, path: str = "history") -> list[Item]:
    """Validate history items: one pass, no copies, few calls (the hot path of loading).
    On the first bad item, a second careful pass names the field."""
    items = read_list(value, path)
    for item in items:
        if type(item) is not dict:
            break
        kind = item.get("type")
        if kind == "tool_result":
            if (
                type(item.get("tool_call_id")) is not str
                or type(item.get("name")) is not str
                or type(item.get("content")) is not str
                or type(item.get("is_error")) is not bool
            ):
                break
        elif kind == "assistant":
            content = item.get("content")
            calls = item.get("tool_calls")
            if (content is not None and type(content) is not str) or type(calls) is not list:
                break
            for call in calls:
                if (
                    type(call) is not dict
                    or type(call.get("id")) is not str
                    or type(call.get("name")) is not str
                    or type(call.get("arguments")) is not dict
                ):
                    break
            else:
                continue
            break
        elif kind != "user" or type(item.get("content")) is not str:
            break
    else:
        return cast(list[Item], items)
    _explain_bad_history(items, path)
    raise AssertionError("unreachable: _explain_bad_history raises")  # pragma: no cover


def _explain_bad_history(items: list[Any], path: str) -> None:
    """Raise RunStateError naming the first bad field of `items`."""
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if type(item) is not dict:
            raise bad_field(where, "an object", item)
        kind = item.get("type")
        if kind == "tool_result":
            for key, expected in (("tool_call_id", str), ("name", str), ("content", str)):
                if type(item.get(key)) is not expected:
                    raise bad_field(f"{where}.{key}", "a string", item.get(key))
            if type(item.get("is_error")) is not bool:
                raise bad_field(f"{where}.is_error", "a boolean", item.get("is_error"))
        elif kind == "assistant":
            content = item.get("content")
            if content is not None and type(content) is not str:
                raise bad_field(f"{where}.content", "a string or null", content)
            _explain_bad_tool_calls(item.get("tool_calls"), f"{where}.tool_calls")
        elif kind == "user":
            read_str(item.get("content"), f"{where}.content")
        else:
            raise RunStateError(
                f"RunState field '{where}.type' must be user, assistant or tool_result, "
                f"got {kind!r}"
            )


def _explain_bad_tool_calls(value: Any, path: str) -> None:
    for index, call in enumerate(read_list(value, path)):
        if not (
            type(call) is dict
            and type(call.get("id")) is str
            and type(call.get("name")) is str
            and type(call.get("arguments")) is dict
        ):
            raise RunStateError(
                f"RunState field '{path}[{index}]' must have a string id and name and "
                "an object of arguments"
            )


def last_turn_index(history: list[Item]) -> int | None:
    """History index of the last assistant item (the turn pending calls belong to).
    Tolerates unvalidated items: RunState validates the history itself."""
    for index in range(len(history) - 1, -1, -1):
        item: Any = history[index]
        if isinstance(item, dict) and item.get("type") == "assistant":
            return index
    return None


def unanswered_calls(history: list[Item]) -> tuple[int, list[ToolCallItem]]:
    """The last model turn's history index (-1 if none) and its calls without a result."""
    turn = last_turn_index(history)
    if turn is None:
        return -1, []
    asked = history[turn]
    if asked["type"] != "assistant" or not asked["tool_calls"]:
        return turn, []
    if turn == len(history) - 1:  # paused right after the model's turn: nothing answered
        return turn, list(asked["tool_calls"])
    answered = {
        item["tool_call_id"] for item in history[turn + 1 :] if item["type"] == "tool_result"
    }
    return turn, [call for call in asked["tool_calls"] if call["id"] not in answered]


def _same_arguments(asked: dict[str, Any], pending: dict[str, Any]) -> bool:
    """Equal as canonical JSON, the form the approver's digest covers: Python's `==`
    alone takes 1, 1.0 and True for the same value."""
    if asked != pending:
        return False
    try:
        return canonical_arguments(asked) == canonical_arguments(pending)
    except InputError:
        return False


def check_integrity(
    *,
    run_id: str,
    history: list[Item],
    pending: Mapping[str, PendingCall],
    decisions: Mapping[str, Decision],
    always: Mapping[str, Decision],
) -> None:
    """Pending calls must be unanswered calls of the last turn, with the same tool,
    arguments and execution key; decisions must fit their call's status."""
    if not pending and not decisions and not always:
        return
    turn, unanswered = unanswered_calls(history)
    by_id = {call["id"]: call for call in unanswered}
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
        fits = isinstance(decision, ApprovedCall | RejectedCall) == (target.status == "approval")
        if not fits:
            raise RunStateError(
                f"decision {decision.kind!r} does not fit call {call_id} ({target.status})"
            )
    for tool_name, rule in always.items():
        if not isinstance(rule, ApprovedCall | RejectedCall):
            raise RunStateError(f"always-rule of {tool_name} must be approved or rejected")
