"""bot.canonical: the one canonical byte form of tool arguments and its digest, shared by
the run core (journal, ledger) and the review card."""

from __future__ import annotations

import hashlib
import json
import math
import re
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bot.review.snapshot
import bot.runtime
from bot.canonical import INT_MAX, INT_MIN, call_digest, canonical_arguments
from bot.canonical import legacy_arguments_digest as arguments_digest
from bot.errors import InputError


def test_the_runtime_and_the_review_layer_use_this_one_implementation() -> None:
    for module in (bot.review.snapshot, bot.runtime):
        assert module.canonical_arguments is canonical_arguments
    assert bot.runtime.call_digest is call_digest
    # No unkeyed digest is offered where cards are made: it would be a password oracle.
    assert not hasattr(bot.review.snapshot, "arguments_digest")
    assert not hasattr(bot.runtime, "arguments_digest")


def test_canonical_form_sorts_keys_compacts_and_keeps_utf8() -> None:
    arguments = {"b": [1, 2.5, None, True], "a": {"z": "ü", "y": "日本"}, "é": "naïve"}
    assert canonical_arguments(arguments) == (
        '{"a":{"y":"日本","z":"ü"},"b":[1,2.5,null,true],"é":"naïve"}'.encode()
    )


def test_number_formats_are_pinned_so_stored_digests_stay_valid() -> None:
    # Python's float repr: orjson would write 1e-7 and 1e16, changing these digests.
    arguments = {"small": 1e-07, "big": 1e16, "one": 1.0, "neg": -0.0, "max": INT_MAX}
    expected = b'{"big":1e+16,"max":18446744073709551615,"neg":-0.0,"one":1.0,"small":1e-07}'
    assert canonical_arguments(arguments) == expected
    assert arguments_digest(arguments) == hashlib.sha256(expected).hexdigest()


def test_equal_arguments_in_any_order_have_one_digest() -> None:
    first = {"service": "payments", "version": "1.2.3", "opts": {"a": 1, "b": 2}}
    second = {"opts": {"b": 2, "a": 1}, "version": "1.2.3", "service": "payments"}
    assert arguments_digest(first) == arguments_digest(second)
    assert re.fullmatch(r"[0-9a-f]{64}", arguments_digest(first))


def test_any_mapping_is_accepted_and_tuples_are_lists() -> None:
    assert canonical_arguments(MappingProxyType({"b": (1, 2), "a": 2})) == b'{"a":2,"b":[1,2]}'


def test_the_64_bit_range_is_accepted_up_to_its_ends() -> None:
    assert canonical_arguments({"low": INT_MIN, "high": INT_MAX}) == (
        b'{"high":18446744073709551615,"low":-9223372036854775808}'
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"x": math.nan}, "finite"),
        ({"x": [math.inf]}, "finite"),
        ({"x": {"y": -math.inf}}, "finite"),
        ({"x": INT_MAX + 1}, r"\$\.x: integer 18446744073709551616 is outside the 64-bit"),
        ({"x": [INT_MIN - 1]}, r"\$\.x\[0\]: integer -9223372036854775809 is outside"),
        ({"x": {1: "a"}}, r"key 1 is not a string"),
        ({"x": {"a", "b"}}, r"\$\.x: set is not JSON"),
        ({"x": b"bytes"}, "bytes is not JSON"),
        ({"x": "\ud800"}, "not valid Unicode"),
        (["not", "a", "mapping"], "JSON object"),
    ],
)
def test_what_json_or_the_state_codec_cannot_carry_is_refused(arguments: Any, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        canonical_arguments(arguments)
    with pytest.raises(InputError, match=problem):
        arguments_digest(arguments)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(INT_MIN, INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
def test_canonical_form_is_stable_across_a_json_round_trip(args: dict[str, Any]) -> None:
    again = json.loads(canonical_arguments(args))
    assert canonical_arguments(again) == canonical_arguments(args)
    assert arguments_digest(again) == arguments_digest(args)
