"""The Block Kit limits Slack enforces, checked where Slack checks them (a post, an
update, a view): a message or modal that would fail in a workspace fails here too, with
Slack's error code and its `[ERROR] … [json-pointer:…]` messages.

Only limits the bot's builders could cross are checked (lengths and counts of the
blocks and elements it uses); a block type this module does not know passes, as the
page shows it as "not rendered" anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
MODAL_TITLE = 24  # title, submit and close of a modal
PRIVATE_METADATA = 3000
ID_CHARS = 255  # block_id, action_id, callback_id

_TEXT_LIMITS = {"section": 3000, "header": 150}
_ELEMENT_COUNTS = {"context": 10, "actions": 25}
_BUTTON_TEXT = 75
_BUTTON_VALUE = 2000
_INPUT_LABEL = 2000
_INPUT_HINT = 2000
_PLAIN_TEXT_INPUT_MAX = 3000
_OPTIONS = 10
_OPTION_TEXT = 75
_OPTION_VALUE = 150
_OPTION_DESCRIPTION = 75
_CONFIRM_TITLE = 100
_CONFIRM_TEXT = 300
_CONFIRM_BUTTON = 30
_FIELDS = 10
_FIELD_TEXT = 2000
_CONTEXT_TEXT = 2000


def message_problems(blocks: Any) -> list[str]:
    """What Slack would refuse in a message's `blocks` (chat.postMessage and friends)."""
    return _blocks(blocks, "/blocks", MESSAGE_BLOCKS)


def view_problems(view: Any, *, home: bool) -> list[str]:
    """What Slack would refuse in a view: a modal (views.open/update/push) or, `home`, an
    App Home tab (views.publish)."""
    if not isinstance(view, Mapping):
        return [_error("must provide an object", "/view")]
    kind = view.get("type")
    expected = "home" if home else "modal"
    if kind != expected:
        return [_error(f"must be {expected!r}", "/view/type")]
    problems = _blocks(view.get("blocks"), "/view/blocks", VIEW_BLOCKS)
    problems += _length(view.get("private_metadata"), PRIVATE_METADATA, "/view/private_metadata")
    problems += _length(view.get("callback_id"), ID_CHARS, "/view/callback_id")
    if not home:
        for key in ("title", "submit", "close"):
            problems += _plain_text(view.get(key), MODAL_TITLE, f"/view/{key}", key == "title")
        has_input = any(
            isinstance(b, Mapping) and b.get("type") == "input" for b in view.get("blocks") or []
        )
        if has_input and view.get("submit") is None:
            problems.append(_error("a modal with inputs must have a submit button", "/view"))
    return problems


def _blocks(blocks: Any, path: str, limit: int) -> list[str]:
    if blocks is None:
        return []
    if not isinstance(blocks, Sequence) or isinstance(blocks, str):
        return [_error("must provide an array", path)]
    problems = _count(blocks, limit, path)
    for index, block in enumerate(blocks):
        problems += _block(block, f"{path}/{index}")
    return problems


def _block(block: Any, path: str) -> list[str]:
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        return [_error("must provide an object with a type", path)]
    kind = block["type"]
    problems = _length(block.get("block_id"), ID_CHARS, f"{path}/block_id")
    if kind in _TEXT_LIMITS:
        required = kind == "header" or "fields" not in block
        problems += _text(block.get("text"), _TEXT_LIMITS[kind], f"{path}/text", required)
    if kind == "section" and "fields" in block:
        fields = block["fields"]
        if not isinstance(fields, list) or len(fields) > _FIELDS:
            problems += _count(fields, _FIELDS, f"{path}/fields")
        else:
            for index, item in enumerate(fields):
                problems += _text(item, _FIELD_TEXT, f"{path}/fields/{index}", True)
    if kind in _ELEMENT_COUNTS:
        problems += _elements(block.get("elements"), kind, f"{path}/elements")
    if kind == "section" and "accessory" in block:
        problems += _element(block["accessory"], f"{path}/accessory")
    if kind == "input":
        problems += _plain_text(block.get("label"), _INPUT_LABEL, f"{path}/label", True)
        problems += _element(block.get("element"), f"{path}/element")
        problems += _plain_text(block.get("hint"), _INPUT_HINT, f"{path}/hint", False)
    return problems


def _elements(elements: Any, kind: str, path: str) -> list[str]:
    limit = _ELEMENT_COUNTS[kind]
    if not isinstance(elements, list) or not elements:
        return [_error("must provide a non-empty array", path)]
    problems = _count(elements, limit, path)
    for index, element in enumerate(elements):
        item = f"{path}/{index}"
        if kind == "context" and isinstance(element, Mapping) and "text" in element:
            problems += _text(element, _CONTEXT_TEXT, item, True)
        else:
            problems += _element(element, item)
    return problems


def _element(element: Any, path: str) -> list[str]:
    if not isinstance(element, Mapping):
        return [_error("must provide an object", path)]
    problems = _length(element.get("action_id"), ID_CHARS, f"{path}/action_id")
    kind = element.get("type")
    if kind == "button":
        problems += _plain_text(element.get("text"), _BUTTON_TEXT, f"{path}/text", True)
        problems += _length(element.get("value"), _BUTTON_VALUE, f"{path}/value")
        if element.get("style") not in (None, "primary", "danger"):
            problems.append(_error("must be 'primary' or 'danger'", f"{path}/style"))
        if "confirm" in element:
            problems += _confirm(element["confirm"], f"{path}/confirm")
    elif kind == "plain_text_input":
        max_length = element.get("max_length", _PLAIN_TEXT_INPUT_MAX)
        if not isinstance(max_length, int) or not 1 <= max_length <= _PLAIN_TEXT_INPUT_MAX:
            problems.append(
                _error(f"must be between 1 and {_PLAIN_TEXT_INPUT_MAX}", f"{path}/max_length")
            )
        elif isinstance(element.get("initial_value"), str):
            problems += _length(element["initial_value"], max_length, f"{path}/initial_value")
    elif kind in ("checkboxes", "radio_buttons", "static_select"):
        problems += _options(element.get("options"), f"{path}/options")
    return problems


def _options(options: Any, path: str) -> list[str]:
    if not isinstance(options, list) or not options:
        return [_error("must provide a non-empty array", path)]
    problems = _count(options, _OPTIONS, path)
    for index, option in enumerate(options):
        item = f"{path}/{index}"
        if not isinstance(option, Mapping):
            problems.append(_error("must provide an object", item))
            continue
        problems += _text(option.get("text"), _OPTION_TEXT, f"{item}/text", True)
        problems += _text(option.get("description"), _OPTION_TEXT, f"{item}/description", False)
        problems += _length(option.get("value"), _OPTION_VALUE, f"{item}/value")
        if "description" in option:
            problems += _text(option["description"], _OPTION_DESCRIPTION,
                              f"{item}/description", True)  # fmt: skip
    return problems


def _confirm(confirm: Any, path: str) -> list[str]:
    """A confirmation dialog: its title, text and two button labels."""
    if not isinstance(confirm, Mapping):
        return [_error("must provide an object", path)]
    return [
        *_plain_text(confirm.get("title"), _CONFIRM_TITLE, f"{path}/title", True),
        *_text(confirm.get("text"), _CONFIRM_TEXT, f"{path}/text", True),
        *_plain_text(confirm.get("confirm"), _CONFIRM_BUTTON, f"{path}/confirm", True),
        *_plain_text(confirm.get("deny"), _CONFIRM_BUTTON, f"{path}/deny", True),
    ]


def _text(text: Any, limit: int, path: str, required: bool) -> list[str]:
    if text is None:
        return [_error("must provide a text object", path)] if required else []
    if not isinstance(text, Mapping) or text.get("type") not in ("plain_text", "mrkdwn"):
        return [_error("must be a plain_text or mrkdwn text object", path)]
    return _text_value(text.get("text"), limit, f"{path}/text")


def _plain_text(text: Any, limit: int, path: str, required: bool) -> list[str]:
    if text is None:
        return [_error("must provide a plain_text object", path)] if required else []
    if not isinstance(text, Mapping) or text.get("type") != "plain_text":
        return [_error("must be a plain_text text object", path)]
    return _text_value(text.get("text"), limit, f"{path}/text")


def _text_value(value: Any, limit: int, path: str) -> list[str]:
    if not isinstance(value, str) or not value:
        return [_error("must be more than 0 characters", path)]
    return _length(value, limit, path)


def _count(items: Sequence[Any], limit: int, path: str) -> list[str]:
    return [] if len(items) <= limit else [_error(f"no more than {limit} items allowed", path)]


def _length(value: Any, limit: int, path: str) -> list[str]:
    if isinstance(value, str) and len(value) > limit:
        return [_error(f"must be less than {limit + 1} characters", path)]
    return []


def _error(what: str, path: str) -> str:
    return f"[ERROR] {what} [json-pointer:{path}]"
