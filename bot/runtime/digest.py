"""Stable identities of a tool call: its execution key and its arguments digest.

`arguments_digest` matches `bot.review.arguments_digest` byte for byte (SHA-256 hex over
canonical JSON: sorted keys, compact separators, UTF-8 kept); it lives here too so the
run core does not import a sibling layer. A test pins the two together.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(arguments: Mapping[str, Any]) -> bytes:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(arguments)).hexdigest()


def execution_key(run_id: str, turn_index: int, tool_call_id: str) -> str:
    """Stable per call: the run, the history position of the model turn that asked for
    it, and the provider's call id (providers may reuse ids across turns)."""
    material = f"{run_id}\x1f{turn_index}\x1f{tool_call_id}".encode()
    return hashlib.sha256(material).hexdigest()[:32]
