"""The bytes a seal and an audit hash cover stay exactly what `json.dumps` wrote.

Seals (store.seals.seal_message), audit details (store.audit.canonical_detail) and
event bodies (store.audit.event_body) are written by orjson where it gives the same
text and by `json` otherwise: a seal or a chain made before verifies after, and one made
now verifies on a version that writes everything with `json`. Each is checked against
the `json` form it replaced, over any values those payloads can hold (text with every
kind of character, whole numbers past 64 bits, floats, nesting)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import InputError
from store.audit import canonical_detail, event_body
from store.seals import seal_message

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
WHOLE = st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
SCALARS = st.none() | st.booleans() | WHOLE | ANY_TEXT | st.floats()
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)


def json_seal_message(purpose: str, fields: dict[str, Any], key_id: str) -> bytes:
    bound = {"fields": dict(fields), "purpose": purpose, "key_id": key_id}
    return json.dumps(bound, sort_keys=True, separators=(",", ":")).encode()


def json_detail(detail: dict[str, Any]) -> str:
    return json.dumps(detail, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_event_body(detail_json: str, **fields: str | None) -> str:
    body = {**fields, "detail": json.loads(detail_json)}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@given(
    fields=st.dictionaries(ANY_TEXT, st.none() | WHOLE | ANY_TEXT, max_size=6),
    purpose=ANY_TEXT,
    key_id=ANY_TEXT,
)
def test_a_seal_message_is_the_json_one(fields: dict[str, Any], purpose: str, key_id: str) -> None:
    assert seal_message(purpose, fields, key_id) == json_seal_message(purpose, fields, key_id)


def test_a_seal_message_escapes_what_json_escapes() -> None:
    """The characters orjson writes raw where ASCII-only JSON escapes them."""
    for text in ("\x7f", "é", "\u2028", "😀", "\ud800"):
        fields = {"voter": text, "at": "2026-11-29T12:00:00.000000Z"}
        assert seal_message("vote", fields, "k1") == json_seal_message("vote", fields, "k1")


@given(detail=st.dictionaries(ANY_TEXT, JSONISH, max_size=4))
def test_an_audit_detail_is_the_json_one(detail: dict[str, Any]) -> None:
    try:
        expected = json_detail(detail)
    except (TypeError, ValueError):
        with pytest.raises(InputError):
            canonical_detail(detail)
        return
    assert canonical_detail(detail) == expected


@given(detail=st.dictionaries(ANY_TEXT, JSONISH, max_size=4), actor=st.none() | ANY_TEXT)
def test_an_event_body_is_the_json_one(detail: dict[str, Any], actor: str | None) -> None:
    detail_json = json_detail(detail)
    fields: dict[str, Any] = {"kind": "decided", "actor": actor, "run_id": "r1",
                              "approval_id": None, "at": "2026-11-29T12:00:00.000000Z"}  # fmt: skip
    assert event_body(detail_json=detail_json, **fields) == json_event_body(detail_json, **fields)


def test_what_orjson_reads_otherwise_is_read_by_json() -> None:
    """A whole number past 64 bits (orjson reads a float), NaN and infinity (orjson
    refuses them), an escaped lone surrogate (orjson refuses it)."""
    fields: dict[str, Any] = {"kind": "k", "actor": None, "run_id": None,
                              "approval_id": "a1", "at": "2026-11-29T12:00:00.000000Z"}  # fmt: skip
    for detail_json in (
        '{"n":123456789012345678901234567890}',
        '{"n":NaN}',
        '{"n":-Infinity}',
        '{"s":"\\ud800"}',
        '{"n":-9223372036854775809}',
    ):
        assert event_body(detail_json=detail_json, **fields) == json_event_body(
            detail_json, **fields
        )
