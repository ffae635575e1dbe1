"""Hypothesis strategies for fuzzing parsers: any JSON value, and a valid document with
some of its parts dropped, replaced by another JSON value or retyped, at any depth (a
parser's guard is exercised much more often from near-valid input than from noise)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "\u202e", "0", "1.1", "1.0", "99.0", "approval", "uncertain"]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=12,
)
_CHANGES = ("keep", "keep", "keep", "keep", "drop", "replace", "descend")


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """`value` (plain JSON data) with some parts dropped, replaced or changed inside."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            change = draw(st.sampled_from(_CHANGES))
            if change == "drop":
                continue
            out[key] = _changed(draw, change, item)
        if draw(st.booleans()):
            out[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        return out
    if isinstance(value, list):
        items = [
            _changed(draw, change, item)
            for item in value
            if (change := draw(st.sampled_from(_CHANGES))) != "drop"
        ]
        if draw(st.booleans()) and items:
            items.append(items[0])  # a repeat: a duplicated id, a doubled entry
        return items
    return _changed(draw, draw(st.sampled_from(_CHANGES)), value)


def _changed(draw: st.DrawFn, change: str, item: Any) -> Any:
    if change == "replace":
        return draw(JSON_VALUES)
    if change == "descend" and isinstance(item, dict | list):
        return draw(mutated(item))
    if change == "descend" and isinstance(item, str):
        return draw(st.sampled_from([item + "\x00", item * 3, item[:1], item.upper(), ""]))
    return item
