"""The redacted snapshot a reviewer sees (canonical bytes and digest: test_canonical.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.canonical import INT_MAX, INT_MIN
from bot.credentials import REDACTED
from bot.errors import InputError
from bot.review.snapshot import SECTION_TEXT_LIMIT, ReviewSnapshot, review_snapshot

SLACK_TOKEN = "xoxb-" + "2718281828-3141592653-AbCdEfGhIjKlMnOp"
DIGEST = "ab" * 32  # review_snapshot shows the digest it is given (the run's keyed one)


def snap(tool_name: str, arguments: dict[str, Any], **options: Any) -> ReviewSnapshot:
    return review_snapshot(tool_name, arguments, digest=DIGEST, **options)


def test_the_snapshot_is_redacted_and_shows_the_digest_it_is_given() -> None:
    real = {"service": "payments", "key": "db_password", "value": "hunter2"}
    first = review_snapshot("set_config", real, digest="12" * 32)
    assert first.arguments == {"service": "payments", "key": "db_password", "value": REDACTED}
    assert first.digest == "12" * 32
    assert first.redacted_paths == ["$.value"]
    assert "hunter2" not in first.to_json()
    assert "hunter2" not in first.render_text()


def test_nested_and_embedded_secrets_are_redacted_in_place() -> None:
    snapshot = snap(
        "notify",
        {
            "channel": "#ops",
            "text": f"ping with {SLACK_TOKEN} please",
            "request": {"headers": [{"Authorization": "Bearer abc.def-ghi_jkl123"}]},
        },
    )
    assert snapshot.arguments["text"] == f"ping with {REDACTED} please"
    assert snapshot.arguments["request"] == {"headers": [{"Authorization": REDACTED}]}
    assert snapshot.redacted_paths == ["$.text", "$.request.headers[0].Authorization"]


def test_a_tool_can_narrow_what_is_shown() -> None:
    arguments = {"service": "payments", "version": "1.2.3", "changelog": "long text"}
    snapshot = snap("deploy_release", arguments, shown_fields=["service", "version", "dry_run"])
    assert snapshot.arguments == {"service": "payments", "version": "1.2.3"}
    assert snapshot.omitted_fields == ["changelog"]
    assert snapshot.digest == DIGEST
    assert "not shown: changelog" in snapshot.render_text()


def test_the_snapshot_round_trips_through_json() -> None:
    snapshot = snap("set_config", {"key": "token", "value": "abc"}, shown_fields=["key", "value"])
    assert ReviewSnapshot.from_json(snapshot.to_json()) == snapshot
    with pytest.raises(InputError, match="not a review snapshot"):
        ReviewSnapshot.from_json('{"tool_name": "x"}')
    with pytest.raises(InputError, match="invalid JSON"):
        ReviewSnapshot.from_json("{")


def test_rendering_escapes_slack_markup_and_cannot_close_the_code_block() -> None:
    snapshot = snap("say", {"text": "<!channel> & <@U123> ```*bold*```"})
    text = snapshot.render_text()
    assert "<" not in text
    assert ">" not in text
    assert "&lt;!channel&gt; &amp; &lt;@U123&gt;" in text
    assert "```" not in text
    # The fence is broken with a JSON escape: the text still means exactly the value.
    assert json.loads(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")) == {
        "text": "<!channel> & <@U123> ```*bold*```"
    }


def test_a_long_value_is_cut_with_a_visible_marker_that_says_how_much() -> None:
    snapshot = snap("say", {"text": "x" * 10_000})
    text = snapshot.render_text(limit=1000)
    assert len(text) <= 1000
    match = re.search(r"… \(truncated, (\d+) more characters\)$", text)
    assert match is not None
    shown = text[: match.start()].rstrip("\n")
    assert len(shown) + int(match.group(1)) == len(json.dumps({"text": "x" * 10_000}, indent=2))


def test_the_cut_never_splits_an_escape_sequence() -> None:
    snapshot = snap("say", {"text": "&" * 5000})
    for limit in range(400, 460):
        text = snapshot.render_text(limit=limit)
        assert len(text) <= limit
        body = text.split("\n… (truncated")[0]
        assert re.fullmatch(r'\{\n  "text": "(&amp;)*', body), body[-12:]


def test_characters_outside_the_bmp_count_twice_and_are_never_split() -> None:
    snapshot = snap("say", {"text": "😀" * 3000})
    text = snapshot.render_text()
    assert len(text.encode("utf-16-le")) // 2 <= SECTION_TEXT_LIMIT - 100
    text.encode("utf-8")  # no lone surrogate
    assert "😀" in text


def test_a_combining_accent_stays_with_its_letter() -> None:
    snapshot = snap("say", {"text": "e\u0301" * 2000})
    for limit in range(300, 320):
        body = snapshot.render_text(limit=limit).split("\n… (truncated")[0]
        assert body.endswith("e\u0301") or body.endswith('"')


def test_a_limit_too_small_to_be_useful_is_refused() -> None:
    with pytest.raises(InputError, match="minimum"):
        snap("x", {}).render_text(limit=50)


# Short pieces repeated up to 600 times: long texts (that must be cut) without the cost
# of generating them character by character; `&<>`, astral and combining characters
# are likely.
pieces = st.text(alphabet=st.sampled_from('ab &<>`"\\é\u0301😀日\n'), max_size=6)
long_texts = st.builds(lambda piece, times: piece * times, pieces, st.integers(0, 600))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(INT_MIN, INT_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | long_texts
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.dictionaries(st.text(max_size=6), json_values, max_size=5)
BROKEN_ESCAPE = re.compile(r"&(?!amp;|lt;|gt;)")


@given(arguments, st.integers(min_value=200, max_value=SECTION_TEXT_LIMIT))
def test_rendered_text_always_fits_and_never_breaks_an_escape(
    args: dict[str, Any], limit: int
) -> None:
    text = snap("tool", args).render_text(limit=limit)
    assert len(text.encode("utf-16-le")) // 2 <= limit
    assert "<" not in text
    assert ">" not in text
    assert not BROKEN_ESCAPE.search(text)
    text.encode("utf-8")


def test_engine_notes_are_redacted_visible_and_shown_under_the_arguments() -> None:
    snapshot = review_snapshot(
        "deploy",
        {"service": "api"},
        digest="a" * 64,
        notes=["asked again: password=hunter2 \u202echanged"],
        amendable=True,
    )
    text = snapshot.render_text()
    assert "hunter2" not in text
    assert "\\u202e" in text
    assert text.index('"service"') < text.index("asked again")
    again = ReviewSnapshot.from_json(snapshot.to_json())
    assert (again.notes, again.amendable) == (snapshot.notes, True)


def test_a_snapshot_without_notes_is_written_as_before() -> None:
    snapshot = review_snapshot("deploy", {"service": "api"}, digest="a" * 64)
    assert set(snapshot.to_dict()) == {
        "tool_name", "arguments", "redacted_paths", "omitted_fields", "digest"
    }  # fmt: skip
