"""Reading what the page shows: the review card, its buttons, a thread's messages."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Seen = Mapping[str, Any]


def buttons(blocks: list[Any]) -> Iterator[tuple[str, str, str]]:
    """(label, block_id, action_id) of every button in `blocks`."""
    for block in blocks:
        if block.get("type") == "actions":
            for element in block["elements"]:
                if element.get("type") == "button":
                    yield element["text"]["text"], block["block_id"], element["action_id"]


def button(blocks: list[Any], label: str) -> dict[str, str]:
    """The ids the page sends for a click on the button labelled `label`."""
    found = [(b, a) for text, b, a in buttons(blocks) if text == label]
    assert found, f"no {label!r} button in {[text for text, _, _ in buttons(blocks)]}"
    block_id, action_id = found[0]
    return {"block_id": block_id, "action_id": action_id}


def card(seen: Seen) -> dict[str, Any] | None:
    """The review card in a thread, once it is there."""
    return next(
        (
            m
            for m in seen["messages"]
            if m["thread_ts"] and any(label == "Approve" for label, _, _ in buttons(m["blocks"]))
        ),
        None,
    )


def texts(seen: Seen, *, ephemeral: bool | None = None) -> list[str]:
    return [m["text"] for m in seen["messages"] if ephemeral is None or m["ephemeral"] == ephemeral]


def refused_calls(seen: Seen) -> list[tuple[str, str, str]]:
    return [(c["method"], c["error"], c["about"]) for c in seen["log"] if c["error"]]
