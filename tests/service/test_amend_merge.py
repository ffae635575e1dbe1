"""merge_edit: what an approver did not really change keeps its stored value."""

from __future__ import annotations

import pytest

from bot.credentials import REDACTED, redact
from bot.errors import InputError
from bot.service.amend import check_no_marker, merge_edit

TOKEN = "xoxb-1234567890-abcdefghijklmnop"


def test_fields_left_out_or_shown_redacted_keep_their_stored_value() -> None:
    stored = {"service": "api", "auth": {"token": TOKEN, "user": "ops"}, "tags": ["a", TOKEN]}
    shown, _ = redact(stored)
    edited = {**shown, "service": "web"}
    edited.pop("tags")

    merged = merge_edit(stored, edited)

    assert merged == {
        "service": "web",
        "auth": {"token": TOKEN, "user": "ops"},
        "tags": ["a", TOKEN],
    }


def test_a_string_shown_partly_redacted_keeps_its_secret_unless_retyped() -> None:
    stored = {"note": f"use {TOKEN} for now"}
    shown, _ = redact(stored)
    assert merge_edit(stored, shown) == stored
    assert merge_edit(stored, {"note": "no token"}) == {"note": "no token"}
    with pytest.raises(InputError, match=r"\$\.note still holds the redaction marker"):
        check_no_marker(merge_edit(stored, {"note": f"use {REDACTED} later"}))


def test_replaced_values_and_new_fields_are_taken_as_given() -> None:
    stored = {"auth": {"token": TOKEN}, "n": 1}
    merged = merge_edit(stored, {"auth": {"token": "xoxb-new-9876543210-zyxwvutsrqpo"}, "m": 2})
    assert merged == {"auth": {"token": "xoxb-new-9876543210-zyxwvutsrqpo"}, "n": 1, "m": 2}
    with pytest.raises(InputError, match=r"\$\.extra\[0\]"):
        check_no_marker(merge_edit(stored, {"extra": [REDACTED]}))
