"""The run context across the wire: only through a serializer, never with a secret in it.

A context crosses into a stored RunState as a JSON object, produced by the agent's
`context_serializer`, or taken as is when it is already a mapping. In strict mode (the
default) anything else is refused. Otherwise a pydantic model goes through its
`model_dump(mode="json")` and a dataclass through `asdict` (each resumes as a dict unless
a `context_deserializer` rebuilds it), and anything else is left out; each with a warning. Secrets
(tokens, keys, passwords) belong in runtime `dependencies`, which are never stored: a
serialized context holding a credential-looking value is refused with the JSON path of
each such value (never the value itself). In strict mode a key that names a secret
(`api_token`, `password`, `secret`, `private_key`; bot.credentials.is_secret_key) is
refused too, whatever its value (`demo-secret-123` has no credential shape, and is one);
a null holds nothing and passes. Without strict mode such a key is stored, with a warning
naming its path.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

import orjson

from bot.credentials import find_secrets
from bot.errors import ContextSerializationError

logger = logging.getLogger(__name__)

ContextSerializer = Callable[[Any], Mapping[str, Any]]
SecretNames = Literal["refuse", "warn", "ignore"]
ContextDeserializer = Callable[[Mapping[str, Any]], Any]


def serialize_context(
    context: Any, *, serializer: ContextSerializer | None, strict: bool, owner: str = "the agent"
) -> dict[str, Any] | None:
    """The JSON object to store for `context` (a fresh copy), or None for no context.
    `owner` is what takes the serializer pair (named in the strict-mode refusal)."""
    if context is None:
        return None
    if serializer is not None:
        try:
            produced: Any = serializer(context)
        except Exception as error:
            raise ContextSerializationError(
                f"the agent's context_serializer failed: {type(error).__name__}: {error}"
            ) from error
        if not isinstance(produced, Mapping):
            raise ContextSerializationError(
                f"the agent's context_serializer must return a mapping, "
                f"got {type(produced).__name__}"
            )
    elif isinstance(context, Mapping):
        produced = context
    elif strict:
        raise ContextSerializationError(
            f"a run context of type {type(context).__name__} cannot be stored: pass a "
            f"mapping, or give {owner} context_serializer= and context_deserializer= "
            "(strict mode)"
        )
    elif callable(getattr(context, "model_dump", None)):
        produced = _model_dump(context)
    elif dataclasses.is_dataclass(context) and not isinstance(context, type):
        logger.warning("storing dataclass context as a dict; it resumes as a dict")
        produced = dataclasses.asdict(context)
    else:
        logger.warning(
            "run context of type %s is not stored (non-strict mode); a resumed run has none",
            type(context).__name__,
        )
        return None
    data = _json_copy(produced)
    check_no_secrets(data, secret_names="refuse" if strict else "warn")
    return data


def _model_dump(context: Any) -> Any:
    """A pydantic model's data (JSON mode, where it has one), kept in non-strict mode."""
    logger.warning(
        "storing %s context through model_dump(); it resumes as a dict "
        "unless a context_deserializer rebuilds it",
        type(context).__name__,
    )
    try:
        produced = context.model_dump(mode="json")
    except TypeError:  # a model_dump without pydantic's `mode`
        produced = context.model_dump()
    if not isinstance(produced, Mapping):
        raise ContextSerializationError(
            f"{type(context).__name__}.model_dump() must return a mapping, "
            f"got {type(produced).__name__}"
        )
    return produced


def check_no_secrets(
    data: Mapping[str, Any] | None, *, secret_names: SecretNames = "ignore"
) -> None:
    """ContextSerializationError naming the path of every credential-looking value; for
    values under secret key names, as `secret_names` says (refuse, warn, or ignore: a
    stored state's context was checked when it was serialized)."""
    if data is None:
        return
    values = find_secrets(data)
    named: list[str] = []
    if secret_names != "ignore":
        found = find_secrets(data, include_secret_keys=True)
        named = [path for path in found if path not in values]
    problems = []
    if values:
        problems.append(f"credential-looking values at {_where(values)}")
    if named and secret_names == "refuse":
        problems.append(f"values under secret key names at {_where(named)} (strict mode)")
    elif named:
        logger.warning(
            "the run context stores values under secret key names at %s (non-strict mode)",
            _where(named),
        )
    if problems:
        raise ContextSerializationError(
            f"the run context holds {'; and '.join(problems)}; "
            "pass secrets as runtime dependencies, which are never stored"
        )


def _where(paths: list[str]) -> str:
    return ", ".join(path.replace("$", "context", 1) for path in paths)


def deserialize_context(
    data: Mapping[str, Any] | None, *, deserializer: ContextDeserializer | None
) -> Any:
    """The live context for a resumed run."""
    if data is None:
        return None
    if deserializer is None:
        return _json_copy(data)
    try:
        return deserializer(_json_copy(data))
    except Exception as error:
        raise ContextSerializationError(
            f"the agent's context_deserializer failed: {type(error).__name__}: {error}"
        ) from error


def _json_copy(data: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy through JSON, so what is stored is exactly what reloads."""
    try:
        copied: dict[str, Any] = json.loads(json.dumps(data, allow_nan=False))
        orjson.dumps(copied)  # the state encoder's limits (64-bit integers) apply too
    except (TypeError, ValueError) as error:
        raise ContextSerializationError(
            f"the serialized run context is not plain JSON data: {error}"
        ) from error
    return copied
