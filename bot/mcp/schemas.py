"""Checking arguments against a tool's input schema (JSON Schema, as its upstream gave it).

The gateway checks a gated call's arguments before anyone is asked about it (a call its
tool would refuse wastes no reviewer's time), and an approver's changed arguments before
they count ("approve with changes"). Both only where the schema can be checked safely:
a valid JSON Schema of at most MAX_SCHEMA_BYTES that refers to nothing outside itself
and has no regular expressions (`pattern`, `patternProperties`), which a hostile upstream
could make take minutes to match. Another schema's calls go to a person as they are,
and cannot be approved with changes.

Problems are told by where and which rule, never by the value (it may be a secret).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from bot.errors import InputError

MAX_SCHEMA_BYTES = 32 * 1024
MAX_PROBLEMS = 5
CACHED_VALIDATORS = 1024
_REGEX_KEYWORDS = frozenset({"pattern", "patternProperties"})
_NOT_CHECKABLE = object()


class Checks:
    """Validators by a schema's digest (a tool's definition digest), each built once:
    deciding whether a schema is checkable and compiling it costs milliseconds, far more
    than checking one call (a call straight through must stay cheap)."""

    def __init__(self, size: int = CACHED_VALIDATORS) -> None:
        self._size = size
        self._built: OrderedDict[str, Any] = OrderedDict()

    def validator(self, digest: str, schema: Mapping[str, Any]) -> Any | None:
        """The compiled validator of `schema` (None: it cannot be checked safely)."""
        found = self._built.get(digest)
        if found is None:
            found = _compiled(schema) if checkable(schema) else _NOT_CHECKABLE
            self._built[digest] = found
            if len(self._built) > self._size:
                self._built.popitem(last=False)
        else:
            self._built.move_to_end(digest)
        return None if found is _NOT_CHECKABLE else found

    def check(self, digest: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> bool:
        """Check `arguments` (InputError naming what breaks the schema); False when the
        schema cannot be checked (nothing was)."""
        validator = self.validator(digest, schema)
        if validator is None:
            return False
        _raise_problems(validator, arguments)
        return True


def checkable(schema: Mapping[str, Any]) -> bool:
    """Whether arguments can be checked against `schema` safely (see the module doc)."""
    try:
        if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
            return False
    except (TypeError, ValueError):
        return False
    if any(_unsafe(key, value) for key, value in _walk(schema)):
        return False
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError:
        return False
    return True


def check(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """InputError naming every way (up to MAX_PROBLEMS) `arguments` break `schema`, which
    must be `checkable`."""
    _raise_problems(_compiled(schema), arguments)


def _compiled(schema: Mapping[str, Any]) -> Any:
    from jsonschema.validators import validator_for

    return validator_for(schema)(schema)


def _raise_problems(validator: Any, arguments: Mapping[str, Any]) -> None:
    problems = []
    for error in validator.iter_errors(dict(arguments)):
        where = "$" + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
        )
        rule = json.dumps(error.validator_value, ensure_ascii=False, default=str)
        rule = rule if len(rule) <= 80 else rule[:79] + "…"
        problems.append(f"{where}: breaks the schema's {error.validator} {rule}")
        if len(problems) == MAX_PROBLEMS:
            break
    if problems:
        raise InputError("; ".join(problems))


def _unsafe(key: str, value: Any) -> bool:
    if key in _REGEX_KEYWORDS:
        return True
    return key == "$ref" and not (isinstance(value, str) and value.startswith("#"))


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 64:  # deeper than any real schema: refuse to look further
        yield "pattern", None
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield str(key), value
            yield from _walk(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, depth + 1)
