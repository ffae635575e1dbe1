"""Stable identities of a tool call: its execution key and its arguments digest.

The digest and its canonical JSON come from the leaf module bot.canonical, which
bot.review uses too, so the journal and the review card agree byte for byte.
"""

from __future__ import annotations

import hashlib

from bot.canonical import arguments_digest, canonical_arguments

__all__ = ["arguments_digest", "canonical_arguments", "execution_key"]


def execution_key(run_id: str, turn_index: int, tool_call_id: str) -> str:
    """Stable per call: the run, the history position of the model turn that asked for
    it, and the provider's call id (providers may reuse ids across turns)."""
    material = f"{run_id}\x1f{turn_index}\x1f{tool_call_id}".encode()
    return hashlib.sha256(material).hexdigest()[:32]
