"""What the reviewer sees is what runs: characters that hide, reorder or fake lines are
shown as visible JSON escapes (`\\u202e`), and a token mixing scripts is flagged.

The escapes are JSON escapes, so the text still means exactly the arguments: the card's
JSON and the edit form's JSON both parse back to the real values.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.review.snapshot import ReviewSnapshot, review_snapshot
from bot.review.visible import arguments_json, visible

DIGEST = "cd" * 32
HIDDEN = {
    "zero width space": "\u200b",
    "zero width non-joiner": "\u200c",
    "zero width joiner": "\u200d",
    "word joiner": "\u2060",
    "byte order mark": "\ufeff",
    "left-to-right embedding": "\u202a",
    "right-to-left embedding": "\u202b",
    "pop directional formatting": "\u202c",
    "left-to-right override": "\u202d",
    "right-to-left override": "\u202e",
    "left-to-right isolate": "\u2066",
    "right-to-left isolate": "\u2067",
    "first strong isolate": "\u2068",
    "pop directional isolate": "\u2069",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "delete": "\x7f",
    "next line (C1)": "\x85",
    "soft hyphen": "\xad",
    "no-break space": "\xa0",
    "arabic letter mark": "\u061c",
    "hangul filler": "\u3164",
    "variation selector 16": "\ufe0f",
    "tag latin small a": "\U000e0061",
    "private use": "\ue000",
}


def card(arguments: dict[str, Any]) -> str:
    return review_snapshot("upload", arguments, digest=DIGEST).render_text()


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_each_hiding_character_is_shown_as_an_escape(name: str) -> None:
    char = HIDDEN[name]
    text = card({"path": f"a{char}b"})
    assert char not in text
    escape = json.dumps(char)[1:-1]  # the JSON escape, e.g. \u202e (a pair past the BMP)
    assert re.fullmatch(r"(\\u[0-9a-f]{4}){1,2}", escape)
    assert f"a{escape}b" in text


def test_a_reversed_file_name_no_longer_reads_as_its_reverse() -> None:
    text = card({"file": "invoice\u202egnp.exe"})
    assert "invoice\\u202egnp.exe" in text


def test_a_line_separator_cannot_fake_a_json_line() -> None:
    fake = 'prod",\u2028  "approved_by": "security-team'
    text = card({"target": fake})
    assert "\u2028" not in text
    assert text.count("\n") == card({"target": "x"}).count("\n")


def test_two_calls_that_looked_identical_now_look_different() -> None:
    plain = card({"host": "db.internal"})
    sneaky = card({"host": "db\u200b.internal"})
    assert plain != sneaky


def test_ordinary_text_is_shown_as_written() -> None:
    arguments = {"note": "Ça va? 日本語 😀 e\u0301 tab\tand newline\n"}
    text = card(arguments)
    assert "Ça va? 日本語 😀 e\u0301" in text
    assert "tab\\tand newline\\n" in text  # JSON's own escapes, as before


def test_keys_and_the_notes_line_show_escapes_too() -> None:
    snapshot = review_snapshot(
        "t", {"ok\u202e": 1, "hidden\u200b": 2}, digest=DIGEST, shown_fields=["ok\u202e"]
    )
    text = snapshot.render_text()
    assert "\u202e" not in text
    assert "\u200b" not in text
    assert "ok\\u202e" in text
    assert "not shown: hidden\\u200b" in text


def test_visible_escapes_single_strings() -> None:
    assert visible("a\u202eb\nc") == "a\\u202eb\\nc"
    assert visible("\U000e0041") == "\\udb40\\udc41"
    assert visible("plain é 😀") == "plain é 😀"


def test_the_arguments_json_parses_back_to_the_same_arguments() -> None:
    arguments = {"file": "x\u202egnp.exe", "sep": "a\u2028b", "tag": "\U000e0041", "n": 1}
    text = arguments_json(arguments)
    assert not any(char in text for char in "\u202e\u2028\U000e0041")
    assert json.loads(text) == arguments


def test_a_fence_is_broken_with_an_escape_not_an_invisible_character() -> None:
    text = card({"cmd": "echo ```oops```"})
    assert "```" not in text
    assert "\u200b" not in text
    assert "``\\u0060oops``\\u0060" in text


def test_a_cut_never_splits_a_visible_escape() -> None:
    snapshot = review_snapshot("say", {"text": "\u202e" * 3000}, digest=DIGEST)
    for limit in range(400, 440):
        body = snapshot.render_text(limit=limit).split("\n… (truncated")[0]
        assert re.fullmatch(r'\{\n  "text": "(\\u202e)*', body), body[-12:]


# -- mixed scripts ---------------------------------------------------------------------


def test_a_cyrillic_letter_in_a_latin_host_name_is_flagged() -> None:
    snapshot = review_snapshot("fetch", {"url": "https://p\u0430ypal.com/login"}, digest=DIGEST)
    [warning] = snapshot.script_warnings()
    assert "$.url" in warning
    assert "p\\u0430ypal" in warning  # the odd letter is pointed out
    assert "Latin" in warning
    assert "Cyrillic" in warning


@pytest.mark.parametrize(
    "text",
    [
        "paypal.com",
        "Москва и Berlin",  # two scripts, but in different words
        "東京タワーとスカイツリー",  # Han with kana is ordinary Japanese
        "서울特別市",  # Hangul with Han
        "release-1.2.3_ß",
    ],
)
def test_ordinary_text_raises_no_warning(text: str) -> None:
    assert review_snapshot("t", {"v": text}, digest=DIGEST).script_warnings() == []


def test_greek_and_fullwidth_look_alikes_are_flagged_and_keys_count() -> None:
    # A Greek omicron in a value; a fullwidth p in a key.
    snapshot = review_snapshot("t", {"host": "g\u03bfogle", "ｐaypal": "x"}, digest=DIGEST)
    warnings = snapshot.script_warnings()
    assert len(warnings) == 2
    assert any("Greek" in line for line in warnings)


def test_warnings_are_computed_from_the_stored_snapshot_too() -> None:
    snapshot = review_snapshot("t", {"host": "p\u0430ypal.com"}, digest=DIGEST)
    assert ReviewSnapshot.from_json(snapshot.to_json()).script_warnings() == (
        snapshot.script_warnings()
    )


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@given(st.dictionaries(texts, texts, max_size=4))
def test_rendered_arguments_never_hold_an_invisible_character(args: dict[str, str]) -> None:
    text = review_snapshot("t", args, digest=DIGEST).render_text()
    invisible = [
        char
        for char in text
        if char != "\n" and ((char.isspace() and char != " ") or not char.isprintable())
    ]
    assert invisible == []
    rendered = arguments_json(args)
    assert json.loads(rendered) == args
