"""A LangGraph thread's latest checkpoint as JSON inside the run's state, and back.

While it runs, a graph checkpoints into a fresh in-memory saver (LangGraph's own
`InMemorySaver`) made for that one run. When the run pauses or answers, the thread's
latest checkpoint is taken out of it through the checkpointer interface (`get_tuple`:
the checkpoint, its metadata, the parent, and the pending writes, which hold the
interrupts and the results of the tasks that completed in the interrupted step) and
serialised with the saver's own serializer (`dumps_typed`: LangGraph's msgpack-based
`JsonPlusSerializer`), each blob base64 in a JSON object. That object is the adapter's
part of the run's state, which the store seals (AES-GCM) like every run state: one
sealed write per pause, through the run's compare-and-set, never a checkpoint row of
its own. To resume, a fresh saver is given that checkpoint (`put`, `put_writes`) and
the graph continues from it, in this process or another.

Only the root namespace's latest checkpoint is kept: graphs with subgraphs are refused
at registration (their checkpoints live in namespaces of their own), and the thread's
earlier checkpoints (LangGraph's time travel) are not kept.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from bot.errors import RunStateError

FORMAT = "langgraph-checkpoint-1"


def saver_with(stored: Mapping[str, Any] | None, *, thread_id: str) -> InMemorySaver:
    """A fresh in-memory saver holding `stored` (from `latest`), or nothing."""
    saver = InMemorySaver()
    if stored is None:
        return saver
    if stored.get("format") != FORMAT:
        raise RunStateError(
            f"the run's LangGraph checkpoint is in format {stored.get('format')!r}, not {FORMAT!r}"
        )
    checkpoint = _loads(saver, stored["checkpoint"])
    metadata = _loads(saver, stored["metadata"])
    parent_id = stored.get("parent_id")
    parent: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent_id is not None:
        parent["checkpoint_id"] = parent_id
    config = saver.put(
        {"configurable": parent}, checkpoint, metadata, dict(checkpoint["channel_versions"])
    )
    writes: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in stored["writes"]:
        writes.setdefault(task_id, []).append((channel, _loads(saver, value)))
    for task_id, task_writes in writes.items():
        saver.put_writes(config, task_writes, task_id)
    return saver


def latest(saver: BaseCheckpointSaver[Any], *, thread_id: str) -> dict[str, Any] | None:
    """The thread's latest checkpoint as JSON-ready data (None: nothing checkpointed)."""
    found = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if found is None:
        return None
    parent = (found.parent_config or {}).get("configurable", {})
    return {
        "format": FORMAT,
        "checkpoint": _dumps(saver, found.checkpoint),
        "metadata": _dumps(saver, found.metadata),
        "parent_id": parent.get("checkpoint_id"),
        "writes": [
            [task_id, channel, _dumps(saver, value)]
            for task_id, channel, value in found.pending_writes or ()
        ],
    }


def _dumps(saver: BaseCheckpointSaver[Any], value: Any) -> list[str]:
    kind, data = saver.serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def _loads(saver: BaseCheckpointSaver[Any], stored: Any) -> Any:
    try:
        kind, text = stored
        return saver.serde.loads_typed((kind, base64.b64decode(text)))
    except Exception as error:
        raise RunStateError(f"the run's LangGraph checkpoint cannot be read: {error}") from error
