"""The audit log's hash chain, for every backend: linking a new event, verifying the
chain, and the export format.

Each event's hash is SHA-256 over the previous event's hash followed by the event's
canonical JSON (kind, actor, run id, approval id, detail, time). The backend keeps an
`audit_head` row (seq and hash of the newest event), so deleting events at the end is
caught as well. Verification walks the log in order and names the first bad event:

- `edited`: its content no longer matches its own hash;
- `deleted`: a sequence number is missing (or the log ends before the head);
- `reordered`: it links to an event that exists elsewhere in the log;
- `rewritten`: it links to a hash no event has (the event before it was replaced with a
  recomputed hash, or events were deleted and the rest renumbered).

Someone who can write the database can still rebuild the whole chain and head; keep
the head hash that `audit verify` prints somewhere else to detect that.

Events are not linked by the transaction that causes them: it queues them
(`audit_queue`, committed with the change they record), and the chain's one sequencer
links the queue in order (`link`; the SQL is store.sql.audit). So no transaction holds
the chain's head while it commits, and writers in any number of processes commit side
by side. An event waits in the queue until linked; every read of the log links first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson

from bot.errors import InputError
from store.records import AuditEvent, AuditVerification
from store.rows import Row, to_db

GENESIS_HASH = "0" * 64
VERIFY_PAGE = 2000


def with_via(detail: Mapping[str, Any], via: str | None) -> dict[str, Any]:
    """`detail` plus where the action came from (`via`: "cli", "terminal", "standing"
    ...), when that was said."""
    return {**detail, "via": via} if via is not None else dict(detail)


def canonical_detail(detail: Mapping[str, Any] | None) -> str:
    """The detail as stored and hashed; InputError when it is not JSON.

    `json.dumps` with sorted keys, no spaces and text unescaped, as it always was. Every
    vote writes one, so a detail of plain values only (text, whole numbers, booleans,
    None, lists and objects with text keys: no floats, whose text the two libraries
    write differently) is written by orjson, which gives the same text for those."""
    if type(detail) is dict and _plain(detail):
        try:
            return orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()
        except orjson.JSONEncodeError:
            pass  # an int beyond 64 bits or a lone surrogate: json writes those
    try:
        return json.dumps(
            dict(detail or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except (TypeError, ValueError) as error:
        raise InputError(f"audit detail is not JSON-serializable: {error}") from None


_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def _plain(detail: dict[Any, Any]) -> bool:
    """Whether `detail` holds only what orjson writes exactly as `json.dumps` does (by
    exact type: a subclass may write itself otherwise). Loops, not all(): a generator
    costs twice as much here, on every vote."""
    for key, item in detail.items():
        if type(key) is not str:
            return False
        if type(item) not in _PLAIN_SCALARS and not _plain_item(item):
            return False
    return True


def _plain_item(item: Any) -> bool:
    kind = type(item)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is dict:
        return _plain(item)
    if kind is list or kind is tuple:
        for each in item:  # noqa: SIM110
            if not _plain_item(each):
                return False
        return True
    return False


def event_body(
    *,
    kind: str,
    actor: str | None,
    run_id: str | None,
    approval_id: str | None,
    detail_json: str,
    at: str,
) -> str:
    """The event's canonical JSON: what its hash covers after the previous hash.

    `json.dumps` (sorted keys, no spaces, text unescaped) of the fields with the detail
    read back by `json.loads`. The sequencer hashes every event and verification every
    one again, so orjson reads and writes it when that gives the same text: a detail
    orjson cannot read (NaN, a lone surrogate) or reads otherwise (a whole number beyond
    64 bits becomes a float) is not plain (`_plain`: no floats) and goes to `json`."""
    body = {"kind": kind, "actor": actor, "run_id": run_id, "approval_id": approval_id,
            "detail": None, "at": at}  # fmt: skip
    try:
        body["detail"] = orjson.loads(detail_json)
        if _plain(body):
            return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        pass  # written by json below
    body["detail"] = json.loads(detail_json)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_hash(
    prev_hash: str,
    *,
    kind: str,
    actor: str | None,
    run_id: str | None,
    approval_id: str | None,
    detail_json: str,
    at: str,
) -> str:
    canonical = event_body(
        kind=kind, actor=actor, run_id=run_id, approval_id=approval_id,
        detail_json=detail_json, at=at,
    )  # fmt: skip
    return chain_hash(prev_hash, canonical)


def chain_hash(prev_hash: str, canonical: str) -> str:
    """SHA-256 hex of the previous hash followed by the event's canonical JSON (UTF-8)."""
    return hashlib.sha256((prev_hash + canonical).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True, slots=True)
class NewEvent:
    """An event to append, before it has its place in the chain (queued)."""

    kind: str
    actor: str | None
    run_id: str | None
    approval_id: str | None
    detail_json: str  # canonical, as stored and hashed
    at: str  # as stored


_PROCESS_DETAIL: dict[str, str] = {}


@contextlib.contextmanager
def recorded_with(**detail: str) -> Iterator[None]:
    """For the block, every event this process writes also records `detail` (an event's
    own detail wins where they share a key). The operator commands record the
    operating-system user so (`os_user`), beside the `--as` actor they were told."""
    saved = dict(_PROCESS_DETAIL)
    _PROCESS_DETAIL.update(detail)
    try:
        yield
    finally:
        _PROCESS_DETAIL.clear()
        _PROCESS_DETAIL.update(saved)


def new_event(
    kind: str,
    *,
    at: datetime | str,
    actor: str | None = None,
    run_id: str | None = None,
    approval_id: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> NewEvent:
    """The event to append; bad input is refused by name before anything is written.
    `at`: a time, or its text as stored (store.rows.to_db) when the caller has it."""
    if not kind:
        raise InputError("audit event kind is empty")
    if _PROCESS_DETAIL:
        detail = {**_PROCESS_DETAIL, **(detail or {})}
    return NewEvent(
        kind=kind, actor=actor, run_id=run_id, approval_id=approval_id,
        detail_json=canonical_detail(detail), at=at if isinstance(at, str) else to_db(at),
    )  # fmt: skip


def link(prev_hash: str, seq: int, queued: Sequence[Row]) -> list[tuple[Any, ...]]:
    """Queued event rows (kind, actor, run_id, approval_id, detail, at), in order, as the
    next chain rows after (`seq`, `prev_hash`): each row's (seq, kind, actor, run_id,
    approval_id, detail, at, prev_hash, hash)."""
    linked = []
    for row in queued:
        seq += 1
        digest = event_hash(
            prev_hash, kind=row["kind"], actor=row["actor"], run_id=row["run_id"],
            approval_id=row["approval_id"], detail_json=row["detail"], at=row["at"],
        )  # fmt: skip
        linked.append(
            (seq, row["kind"], row["actor"], row["run_id"], row["approval_id"], row["detail"],
             row["at"], prev_hash, digest)
        )  # fmt: skip
        prev_hash = digest
    return linked


class ChainReader(Protocol):
    """The three reads verification needs from a backend."""

    async def audit_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest event; (0, GENESIS_HASH) when the log is empty."""
        ...

    async def chain_page(self, first: int, last: int, limit: int) -> Sequence[Row]:
        """Up to `limit` event rows with `first <= seq <= last`, in seq order."""
        ...

    async def has_event_hash(self, event_hash: str) -> bool: ...


async def verify_chain(reader: ChainReader) -> AuditVerification:
    """Walk the chain up to the head read first (later appends are not judged) and
    report the first bad event and how it is bad."""
    head_seq, head_hash = await reader.audit_head()
    previous_hash, expected_seq, checked = GENESIS_HASH, 1, 0
    while expected_seq <= head_seq:
        rows = await reader.chain_page(expected_seq, head_seq, VERIFY_PAGE)
        for row in rows:
            problem = await _check_event(reader, row, previous_hash, expected_seq)
            if problem is not None:
                return _bad(checked, expected_seq, problem)
            previous_hash, expected_seq, checked = row["hash"], expected_seq + 1, checked + 1
        if len(rows) < VERIFY_PAGE:
            break
    if expected_seq <= head_seq:
        return _bad(checked, expected_seq, "deleted")  # the log ends before its head
    if previous_hash != head_hash:
        return _bad(checked, head_seq, "rewritten")
    return AuditVerification(ok=True, checked=checked)


def _bad(checked: int, seq: int, problem: str) -> AuditVerification:
    return AuditVerification(ok=False, checked=checked, first_bad_seq=seq, problem=problem)


async def _check_event(
    reader: ChainReader, row: Row, previous_hash: str, expected_seq: int
) -> str | None:
    if int(row["seq"]) != expected_seq:
        return "deleted"
    recomputed = event_hash(
        row["prev_hash"],
        kind=row["kind"],
        actor=row["actor"],
        run_id=row["run_id"],
        approval_id=row["approval_id"],
        detail_json=row["detail"],
        at=row["at"],
    )
    if recomputed != row["hash"]:
        return "edited"
    if row["prev_hash"] != previous_hash:
        elsewhere = await reader.has_event_hash(row["prev_hash"])
        return "reordered" if elsewhere else "rewritten"
    return None


def event_to_json_line(event: AuditEvent) -> str:
    """One export line: every field, times in ISO 8601 UTC."""
    record = {
        "seq": event.seq,
        "kind": event.kind,
        "actor": event.actor,
        "run_id": event.run_id,
        "approval_id": event.approval_id,
        "detail": dict(event.detail),
        "at": event.at.isoformat(),
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }
    return json.dumps(record, sort_keys=True, ensure_ascii=False)
