"""Credential patterns: recognise secret-looking values and key names, find them, redact them.

A leaf module (it imports nothing of ours), so the run core can scan a context before it
is serialized and the review snapshot can redact tool arguments before a human sees them.

Two independent signals:

- **Values** that have the shape of a credential, anywhere inside a string: Slack tokens
  (`xoxb-…`, `xapp-…`) and webhook URLs, AWS access key ids (`AKIA…`/`ASIA…`) and AWS
  secret keys written next to their key name, `sk-`/`sk-proj-`/`sk-ant-` style API keys,
  GitHub tokens (`ghp_…`, `github_pat_…`), `Bearer …` strings, JWTs, PEM private key
  blocks (a GCP service-account `private_key` is one), passwords inside URLs
  (`postgres://user:pw@host`) and `name=value` / `name: value` / `"name": "value"`
  assignments whose name is a secret key name (`db_password=hunter2`; not the bare words
  session, pass, auth and sid, which prose uses). Only the credential part of a longer
  string is replaced.
- **Key names** that say their value is secret (`password`, `api_key`, `clientSecret`,
  `X-Auth-Token`, `session_id`, `Cookie` …). Names are split into words (snake, kebab,
  dotted and camelCase all work) and compared case-insensitively.

  Deliberate non-matches: a name with a word that makes it *about* a secret rather than
  the secret itself is not secret: `token_count`, `max_tokens`, `password_length`,
  `token_type`, `token_url`, `secret_name`, `password_file`, `session_timeout`. The
  plural `tokens` alone is not secret either (LLM settings use it for counts). A
  credential-shaped value under such a key is still caught by the value patterns.

A `{"name": "DB_PASSWORD", "value": "..."}` pair (Kubernetes env lists, config setters)
has its `value` redacted because its sibling names a secret key.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "«redacted»"


# Each value pattern is searched on its own, and only when one of its literal hints occurs
# in the text (a cheap `in` test), so long strings are scanned quickly. A group named
# `secret` (when present) marks the part to replace, so a key name or URL around the
# secret stays readable. A pattern may insist on a digit in what it matched, which keeps
# words such as `sk-learn-is-a-python-library` out. Overlapping finds are merged.
@dataclass(frozen=True, kw_only=True)
class _ValuePattern:
    regex: re.Pattern[str]
    hints: tuple[str, ...] = ()
    lowercase_hints: tuple[str, ...] = ()  # looked for in the lower-cased text
    needs_digit: bool = False

    def spans(self, text: str, lowered: str) -> list[tuple[int, int]]:
        if self.hints and not any(hint in text for hint in self.hints):
            return []
        if self.lowercase_hints and not any(hint in lowered for hint in self.lowercase_hints):
            return []
        group = "secret" if "secret" in self.regex.groupindex else 0
        return [
            match.span(group)
            for match in self.regex.finditer(text)
            if not self.needs_digit or _DIGIT_RE.search(match.group(group))
        ]


def _pattern(
    pattern: str,
    *hints: str,
    lowercase_hints: tuple[str, ...] = (),
    needs_digit: bool = False,
    flags: int = 0,
) -> _ValuePattern:
    return _ValuePattern(
        regex=re.compile(pattern, flags),
        hints=hints,
        lowercase_hints=lowercase_hints,
        needs_digit=needs_digit,
    )


_DIGIT_RE = re.compile(r"[0-9]")
_NOT_AFTER_ALNUM = r"(?<![A-Za-z0-9])"
_VALUE_PATTERNS: tuple[_ValuePattern, ...] = (
    # PEM private key blocks (a GCP service-account private_key is one); an unterminated
    # block is redacted to the end of the string.
    _pattern(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
        "PRIVATE KEY",
        flags=re.DOTALL,
    ),
    _pattern(
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
        "hooks.slack.com",
    ),
    _pattern(_NOT_AFTER_ALNUM + r"xox[abposr]-[A-Za-z0-9\-]{10,}", "xox"),
    _pattern(_NOT_AFTER_ALNUM + r"xapp-[0-9]+-[A-Za-z0-9\-]{10,}", "xapp-"),
    _pattern(
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
    ),
    # An AWS secret access key is 40 base64 characters: recognisable only next to its name.
    _pattern(
        r"(?i:secret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        lowercase_hints=("access",),
    ),
    _pattern(
        _NOT_AFTER_ALNUM + r"sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
        "sk-",
        needs_digit=True,
    ),
    _pattern(_NOT_AFTER_ALNUM + r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", "k_live_", "k_test_"),
    _pattern(_NOT_AFTER_ALNUM + r"gh[pousr]_[A-Za-z0-9]{30,}", "gh"),
    _pattern(_NOT_AFTER_ALNUM + r"github_pat_[A-Za-z0-9_]{22,}", "github_pat_"),
    _pattern(_NOT_AFTER_ALNUM + r"AIza[0-9A-Za-z_\-]{35}", "AIza"),
    _pattern(
        r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{7,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*",
        "eyJ",
    ),
    _pattern(
        _NOT_AFTER_ALNUM + r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/=\-]{16,})",
        lowercase_hints=("bearer",),
        needs_digit=True,
    ),
    _pattern(
        r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@",
        "://",
    ),
)
# `name=value` / `name: value` / `"name": "value"` (JSON or a Python dict written as
# text): the value is secret when the name is a secret key name.
_ASSIGNMENT_RE = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z][A-Za-z0-9_.\-]*)[\"']?\s*[:=]\s*[\"']?")
# Every secret key name holds one of these (lower-cased): text with none of them has no
# secret assignment, and is not scanned for one.
_SECRET_NAME_FRAGMENTS = (
    "pass", "pwd", "token", "session", "jwt", "sid", "auth", "secret", "credential", "key",
    "cookie", "bearer",
)  # fmt: skip
# Secret as a key name, but too common in prose ("Session: morning") to redact a
# `name: value` inside free text on their own.
_AMBIGUOUS_IN_PROSE = frozenset({"session", "pass", "auth", "sid"})
_ASSIGNED_VALUE_RE = re.compile(r"(?:(?i:bearer|basic|token)\s+)?[^\s\"',;&]+")
# Nothing can match without one of these: most strings are cleared by a few fast
# substring tests (much faster than one regex alternation over a long text).
_TRIGGERS = (":", "=", *(hint for pattern in _VALUE_PATTERNS for hint in pattern.hints))


def _may_hold_secret(text: str) -> bool:
    return any(trigger in text for trigger in _TRIGGERS) or "bearer" in text.lower()


# Key names.
_WORD_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ABOUT_A_SECRET = frozenset(
    {
        "count", "counts", "limit", "limits", "max", "min", "num", "number", "total",
        "length", "len", "size", "type", "types", "kind", "url", "uri", "endpoint",
        "ttl", "timeout", "expiry", "expires", "expiration", "expired", "lifetime",
        "age", "name", "names", "hint", "file", "path", "policy", "rotation", "format",
        "usage", "budget", "encoding", "method", "mode", "enabled", "provider",
        "scheme", "scope", "scopes", "required",
    }
)  # fmt: skip
_SECRET_FRAGMENTS = (
    "password", "passwd", "passphrase", "secret", "credential", "apikey", "accesskey",
    "privatekey", "signingkey", "encryptionkey", "authtoken", "accesstoken",
    "refreshtoken", "idtoken", "sessionid", "sessiontoken", "sessionkey", "cookie",
    "authorization", "bearer",
)  # fmt: skip
_SECRET_WORDS = frozenset({"pwd", "pass", "token", "session", "jwt", "sid", "auth"})
_NAME_FIELDS = frozenset(
    {"key", "name", "field", "setting", "variable", "var", "env", "param", "parameter", "option"}
)
_VALUE_FIELDS = ("value", "val")


def _key_words(name: str) -> list[str]:
    return [word.lower() for word in _WORD_RE.findall(name)]


@functools.lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """True when a key name says its value is a secret (see the module notes)."""
    words = _key_words(name)
    if not words or any(word in _ABOUT_A_SECRET for word in words):
        return False
    if any(word in _SECRET_WORDS or word.endswith("token") for word in words):
        return True
    joined = "".join(words)
    return any(fragment in joined for fragment in _SECRET_FRAGMENTS)


def _assignment_spans(text: str, lowered: str) -> list[tuple[int, int]]:
    if ":" not in text and "=" not in text:
        return []
    if not any(fragment in lowered for fragment in _SECRET_NAME_FRAGMENTS):
        return []
    spans = []
    for match in _ASSIGNMENT_RE.finditer(text):
        name = match.group(1)
        if not is_secret_key(name) or name.lower() in _AMBIGUOUS_IN_PROSE:
            continue
        value = _ASSIGNED_VALUE_RE.match(text, match.end())
        if value is not None:
            spans.append(value.span())
    return spans


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, non-overlapping spans of `text` that are secret."""
    if not _may_hold_secret(text):
        return []
    lowered = text.lower()
    spans = _assignment_spans(text, lowered)
    for pattern in _VALUE_PATTERNS:
        spans.extend(pattern.spans(text, lowered))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact_text(text: str, marker: str = REDACTED) -> str:
    """Replace each credential-shaped part of `text` with `marker`; keep the rest."""
    spans = _secret_spans(text)
    if not spans:
        return text
    pieces = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(marker)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def child_path(path: str, key: object) -> str:
    """The JSON path of `key` (an index or a name) under `path`, as `redact` writes it."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if _IDENTIFIER_RE.match(text):
        return f"{path}.{text}"
    quoted = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{quoted}']"


class _Redactor:
    """One recursive pass; collects the JSON paths of everything it replaced."""

    def __init__(self, *, marker: str, by_key: bool, keep_hidden: Collection[str] = ()) -> None:
        self.marker = marker
        self.by_key = by_key
        self.keep_hidden = frozenset(keep_hidden)
        self.paths: list[str] = []

    def value(self, value: Any, path: str) -> Any:
        if path in self.keep_hidden:
            return self._kept_hidden(value, path)
        return self._by_rules(value, path)

    def _kept_hidden(self, value: Any, path: str) -> Any:
        """Hidden before: as the rules show it when they hide some of it, else whole."""
        found = len(self.paths)
        shown = self._by_rules(value, path)
        if len(self.paths) > found:
            return shown
        self.paths.append(path)
        return self.marker

    def _by_rules(self, value: Any, path: str) -> Any:
        if isinstance(value, str):
            return self.string(value, path)
        if isinstance(value, Mapping):
            return self.mapping(value, path)
        if isinstance(value, list | tuple):
            return [self.value(item, child_path(path, index)) for index, item in enumerate(value)]
        return value

    def string(self, value: str, path: str) -> str:
        redacted = redact_text(value, self.marker)
        if redacted != value:
            self.paths.append(path)
        return redacted

    def mapping(self, mapping: Mapping[Any, Any], path: str) -> dict[Any, Any]:
        forced = self._value_field_named_secret(mapping) if self.by_key else None
        result: dict[Any, Any] = {}
        for key, item in mapping.items():
            shown_key = self._key(key, path)
            child = child_path(path, shown_key)
            secret_by_name = isinstance(key, str) and is_secret_key(key)
            if self.by_key and item is not None and (secret_by_name or key == forced):
                self.paths.append(child)
                result[shown_key] = self.marker
            else:
                result[shown_key] = self.value(item, child)
        return result

    def _key(self, key: Any, path: str) -> Any:
        if not isinstance(key, str):
            return key
        redacted = redact_text(key, self.marker)
        if redacted != key:
            self.paths.append(child_path(path, redacted))
        return redacted

    @staticmethod
    def _value_field_named_secret(mapping: Mapping[Any, Any]) -> str | None:
        """`value` in `{"name": "DB_PASSWORD", "value": ...}`, else None."""
        names = [
            item
            for field, item in mapping.items()
            if isinstance(field, str) and field.lower() in _NAME_FIELDS and isinstance(item, str)
        ]
        if not any(is_secret_key(name) for name in names):
            return None
        return next((field for field in _VALUE_FIELDS if field in mapping), None)


def find_secrets(obj: Any, *, include_secret_keys: bool = False) -> list[str]:
    """JSON paths (`$.a.b[0]`) of every value that looks like a credential.

    Value-based by default (what a context scan needs: a field called `token_budget`
    holding `5` is fine, `xoxb-…` anywhere is not). `include_secret_keys=True` also
    reports values held under secret-looking key names.
    """
    redactor = _Redactor(marker=REDACTED, by_key=include_secret_keys)
    redactor.value(obj, "$")
    return redactor.paths


def redact(
    obj: Any, marker: str = REDACTED, *, keep_hidden: Collection[str] = ()
) -> tuple[Any, list[str]]:
    """A copy of `obj` with secrets replaced by `marker`, and the JSON paths replaced.

    Values under secret key names are replaced whole (unless None); credential-shaped
    parts of any other string are replaced in place. Tuples come back as lists. A path
    in `keep_hidden` (hidden in an earlier snapshot of the same call) is replaced whole
    unless the rules already hide part of it.
    """
    redactor = _Redactor(marker=marker, by_key=True, keep_hidden=keep_hidden)
    return redactor.value(obj, "$"), redactor.paths


def values_at_paths(obj: Any, paths: Collection[str]) -> dict[str, Any]:
    """The values found in `obj` at `paths` (JSON paths as `redact` names them)."""
    wanted = frozenset(paths)
    found: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if path in wanted:
            found[path] = value
        if isinstance(value, Mapping):
            for key, item in value.items():
                shown = redact_text(key) if isinstance(key, str) else key
                walk(item, child_path(path, shown))
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                walk(item, child_path(path, index))

    walk(obj, "$")
    return found
