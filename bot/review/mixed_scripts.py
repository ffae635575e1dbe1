"""Tokens whose letters come from more than one script (a Cyrillic `а` in a Latin host
name): the review card names them under the arguments."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from bot.credentials import child_path
from bot.review.visible import json_escape

_TOKEN = re.compile(r"\w+")
_NEUTRAL_LETTERS = frozenset({"MODIFIER", "FEMININE", "MASCULINE"})
_MIXES_THAT_ARE_ONE_WRITING = (
    frozenset({"Han", "Kana"}),  # Japanese
    frozenset({"Han", "Hangul"}),  # Korean
)


def mixed_script_tokens(value: Any, path: str) -> Any:
    """(path, token, scripts) for each token mixing scripts, in keys and values."""
    if isinstance(value, str):
        yield from ((path, token, scripts) for token, scripts in _mixed_in(value))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = child_path(path, key)
            if isinstance(key, str):
                yield from ((child, token, scripts) for token, scripts in _mixed_in(key))
            yield from mixed_script_tokens(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from mixed_script_tokens(item, f"{path}[{index}]")


def _mixed_in(text: str) -> list[tuple[str, list[str]]]:
    if text.isascii():
        return []
    found = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.isascii():
            continue
        scripts = {_script(char) for char in token if char.isalpha()} - {None}
        if len(scripts) > 1 and not any(scripts <= one for one in _MIXES_THAT_ARE_ONE_WRITING):
            found.append((token, sorted(str(script) for script in scripts)))
    return found


@functools.lru_cache(maxsize=4096)
def _script(letter: str) -> str | None:
    """The script of a letter, from its Unicode name ("CYRILLIC SMALL LETTER A")."""
    if letter.isascii():
        return "Latin"
    words = unicodedata.name(letter, "").split()
    if not words or words[0] in _NEUTRAL_LETTERS:
        return None
    first = words[0]
    if first == "CJK":
        return "Han"
    if first.startswith(("HIRAGANA", "KATAKANA")):
        return "Kana"
    return first.capitalize()


def pointed_out(token: str) -> str:
    """The token with every character outside ASCII as its escape, so the odd one is seen."""
    return "".join(char if char.isascii() else json_escape(char) for char in token)
