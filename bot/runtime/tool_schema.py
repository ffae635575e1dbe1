"""JSON schema from a tool function's type hints, and validation of the model's arguments.

Each supported annotation becomes a `TypeRule`: the JSON schema the model is shown and a
checker that validates (and, for enums and numbers, converts) one value. A bad value
yields a problem string naming the argument path; nothing is executed on a bad call.

Supported: str, int, float, bool, list / list[X], dict / dict[str, X], X | None and
Optional[X], unions of supported types, Literal[...], Enum subclasses, Any, and
Annotated[X, "description"].
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import ConfigError, InputError

# (value, path) -> converted value; raises _Invalid on a bad value.
Checker = Callable[[Any, str], Any]


class _Invalid(Exception):
    """One bad argument value (internal: collected into an InputError)."""


@dataclass(frozen=True, kw_only=True)
class TypeRule:
    schema: dict[str, Any]
    check: Checker


@dataclass(frozen=True, kw_only=True)
class Parameter:
    name: str
    rule: TypeRule
    required: bool


@dataclass(frozen=True, kw_only=True)
class Signature:
    """What a tool accepts: the JSON schema and the per-parameter rules."""

    parameters: tuple[Parameter, ...]
    schema: dict[str, Any]

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check `arguments` and return them converted, or raise InputError listing
        every problem (unknown, missing and ill-typed arguments)."""
        if not isinstance(arguments, Mapping):
            raise InputError(f"arguments must be a JSON object, got {_describe(arguments)}")
        problems: list[str] = []
        known = {p.name for p in self.parameters}
        problems.extend(f"unexpected argument {name!r}" for name in arguments if name not in known)
        converted: dict[str, Any] = {}
        for param in self.parameters:
            if param.name not in arguments:
                if param.required:
                    problems.append(f"missing required argument {param.name!r}")
                continue
            try:
                converted[param.name] = param.rule.check(arguments[param.name], param.name)
            except _Invalid as invalid:
                problems.append(str(invalid))
        if problems:
            raise InputError("; ".join(problems))
        return converted


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _fail(path: str, expected: str, value: Any) -> typing.NoReturn:
    raise _Invalid(f"{path!r} must be {expected}, got {_describe(value)}")


def _check_str(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        _fail(path, "a string", value)
    return value


def _check_bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        _fail(path, "a boolean", value)
    return value


def _check_int(value: Any, path: str) -> Any:
    if isinstance(value, bool):
        _fail(path, "an integer", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    _fail(path, "an integer", value)


def _check_float(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(path, "a number", value)
    return float(value)


def _check_any(value: Any, path: str) -> Any:
    return value


_SCALARS: dict[Any, TypeRule] = {
    str: TypeRule(schema={"type": "string"}, check=_check_str),
    bool: TypeRule(schema={"type": "boolean"}, check=_check_bool),
    int: TypeRule(schema={"type": "integer"}, check=_check_int),
    float: TypeRule(schema={"type": "number"}, check=_check_float),
    Any: TypeRule(schema={}, check=_check_any),
}


def rule_for(annotation: Any, where: str) -> TypeRule:
    """The TypeRule for one annotation; ConfigError names `where` when unsupported."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _annotated_rule(args, where)
    if annotation is list or origin is list:
        return _list_rule(args[0] if args else Any, where)
    if annotation is dict or origin is dict:
        return _dict_rule(args, where)
    if origin is typing.Union or origin is types.UnionType:
        return _union_rule(args, where)
    if origin is typing.Literal:
        return _literal_rule(args, where)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_rule(annotation, where)
    raise ConfigError(f"{where}: unsupported type hint {annotation!r}")


def _annotated_rule(args: tuple[Any, ...], where: str) -> TypeRule:
    inner = rule_for(args[0], where)
    notes = [note for note in args[1:] if isinstance(note, str)]
    if not notes:
        return inner
    return TypeRule(schema={**inner.schema, "description": " ".join(notes)}, check=inner.check)


def _list_rule(item_type: Any, where: str) -> TypeRule:
    item = rule_for(item_type, where)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            _fail(path, "an array", value)
        return [item.check(element, f"{path}[{index}]") for index, element in enumerate(value)]

    schema: dict[str, Any] = {"type": "array"}
    if item.schema:
        schema["items"] = item.schema
    return TypeRule(schema=schema, check=check)


def _dict_rule(args: tuple[Any, ...], where: str) -> TypeRule:
    if args and args[0] is not str:
        raise ConfigError(f"{where}: dict keys must be str (JSON objects), got {args[0]!r}")
    value_rule = rule_for(args[1] if args else Any, where)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            _fail(path, "an object", value)
        return {key: value_rule.check(item, f"{path}.{key}") for key, item in value.items()}

    schema: dict[str, Any] = {"type": "object"}
    if value_rule.schema:
        schema["additionalProperties"] = value_rule.schema
    return TypeRule(schema=schema, check=check)


def _union_rule(args: tuple[Any, ...], where: str) -> TypeRule:
    nullable = type(None) in args
    options = [rule_for(arg, where) for arg in args if arg is not type(None)]
    schemas = [rule.schema for rule in options] + ([{"type": "null"}] if nullable else [])
    if len(schemas) == 1:
        return options[0]
    expected = " or ".join(_schema_name(schema) for schema in schemas)

    def check(value: Any, path: str) -> Any:
        if value is None and nullable:
            return None
        if len(options) == 1 and value is not None:
            return options[0].check(value, path)  # X | None: X's own, precise message
        for option in options:
            try:
                return option.check(value, path)
            except _Invalid:
                continue
        _fail(path, expected, value)

    return TypeRule(schema={"anyOf": schemas}, check=check)


def _schema_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    kind = schema.get("type")
    names = {
        "string": "a string", "integer": "an integer", "number": "a number",
        "boolean": "a boolean", "array": "an array", "object": "an object", "null": "null",
    }  # fmt: skip
    return names.get(str(kind), "a value")


def _literal_rule(values: tuple[Any, ...], where: str) -> TypeRule:
    for value in values:
        if not isinstance(value, str | int | bool) and value is not None:
            raise ConfigError(f"{where}: Literal values must be str, int, bool or None")
    allowed = list(values)

    def check(value: Any, path: str) -> Any:
        for candidate in allowed:
            if type(candidate) is type(value) and candidate == value:
                return value
        _fail(path, "one of " + ", ".join(repr(v) for v in allowed), value)

    return TypeRule(schema={"enum": allowed}, check=check)


def _enum_rule(enum_type: type[enum.Enum], where: str) -> TypeRule:
    members = list(enum_type)
    for member in members:
        if not isinstance(member.value, str | int):
            raise ConfigError(f"{where}: enum {enum_type.__name__} values must be str or int")

    def check(value: Any, path: str) -> Any:
        for member in members:
            if type(member.value) is type(value) and member.value == value:
                return member
        _fail(path, "one of " + ", ".join(repr(m.value) for m in members), value)

    return TypeRule(schema={"enum": [m.value for m in members]}, check=check)


def signature_of(function: Callable[..., Any], *, tool_name: str) -> Signature:
    """Build the Signature of `function` from its type hints and docstring."""
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except (NameError, TypeError) as error:
        raise ConfigError(f"tool {tool_name!r}: cannot resolve type hints: {error}") from error
    arg_docs = argument_docs(inspect.getdoc(function) or "")
    parameters: list[Parameter] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(function).parameters.values():
        where = f"tool {tool_name!r}, parameter {param.name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigError(f"{where}: only named parameters can be tool arguments")
        if param.name not in hints:
            raise ConfigError(f"{where}: add a type hint (it becomes the JSON schema)")
        rule = rule_for(hints[param.name], where)
        schema = dict(rule.schema)
        if param.name in arg_docs and "description" not in schema:
            schema["description"] = arg_docs[param.name]
        is_required = param.default is inspect.Parameter.empty
        if not is_required and _is_json_scalar(param.default):
            schema["default"] = param.default
        if is_required:
            required.append(param.name)
        properties[param.name] = schema
        parameters.append(Parameter(name=param.name, rule=rule, required=is_required))
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return Signature(parameters=tuple(parameters), schema=schema)


def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def summary_of(docstring: str) -> str:
    """The docstring up to its `Args:` section (or all of it), whitespace-normalized."""
    lines = []
    for line in docstring.splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:", "Returns:", "Raises:"):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def argument_docs(docstring: str) -> dict[str, str]:
    """Google-style `Args:` entries (`name: text`, continuation lines indented)."""
    docs: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for raw in docstring.splitlines():
        line = raw.strip()
        if line in ("Args:", "Arguments:", "Parameters:"):
            in_args, current = True, None
            continue
        if not in_args:
            continue
        if not raw.startswith((" ", "\t")) and line:
            break  # the next section
        name, sep, text = line.partition(":")
        if (
            sep
            and name.strip().split(" ")[0].isidentifier()
            and raw.startswith("    ")
            and (not raw.startswith("        "))
        ):
            current = name.strip().split(" ")[0]
            docs[current] = text.strip()
        elif current and line:
            docs[current] = f"{docs[current]} {line}".strip()
    return docs
