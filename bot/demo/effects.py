"""The simulated downstream of the demo ops tools: an append-only JSON-lines effects file.

Every invocation of a tool that changes something appends exactly one line:

    {"time": "...Z", "tool": "deploy_release", "arguments": {...redacted...},
     "arguments_digest": "<the call's digest>", "execution_key": "...",
     "result": "...", "auth": "sha256:<token fingerprint>", "duplicate": false}

The file is also the downstream's memory. A tool that passes its execution key as an
idempotency key (`deploy_release`) is recognised when the key was applied before: the
downstream answers with the first result and the line says `"duplicate": true`. A key
reused with other arguments is refused, as a real idempotent API would.

Arguments are stored redacted (a `set_config` value may be a password); the call's
keyed digest (`current_tool_call().digest`, the one its review card showed) says which
approved call was applied. It is never an unkeyed hash of the arguments, which would let
a reader of this file confirm a guessed password. Lines are written under an exclusive
`flock`, read-check-append as one step, so concurrent processes never interleave or
both apply the same key. Each process remembers where the first application of every
key it has read begins in the file and where it stopped reading (`_Index`), and under
the lock reads only what was appended since (by itself or another process), so a call
costs the same on the millionth line as on the first (it read the whole file on every
call before). What it remembers per key is two integers, not the line: a soak of 36,000
runs grew the server by 2 KiB a run while the index kept every parsed line.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bot.canonical import digests_equal
from bot.credentials import redact
from bot.errors import InputError


@dataclass(frozen=True, kw_only=True)
class Effect:
    """One downstream request: what to apply and how it authenticates."""

    tool: str
    arguments: Mapping[str, Any]
    execution_key: str
    digest: str  # the call's keyed digest, as its card showed it
    idempotent: bool
    api_token: str


@dataclass(frozen=True, kw_only=True)
class Applied:
    """The downstream's answer: the result, and whether the key had been applied before."""

    result: str
    duplicate: bool


def token_fingerprint(token: str) -> str:
    """Shows which token was used without revealing it."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12]


class EffectsFile:
    """The effects file at `path` (created on first write, directories included)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._index = _Index()

    async def apply(self, effect: Effect, result: str) -> Applied:
        """Record `effect` with `result`, unless its key was applied before (see module)."""
        return await asyncio.to_thread(self._apply, effect, result)

    async def lines(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._read_lines)

    def _read_lines(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return list(_parse(text, self.path))

    def _apply(self, effect: Effect, result: str) -> Applied:
        digest = effect.digest
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
            self._index.catch_up(handle, self.path)
            earlier = (
                self._index.first(handle, self.path, effect.tool, effect.execution_key)
                if effect.idempotent
                else None
            )
            if earlier is not None and not digests_equal(
                str(earlier.get("arguments_digest")), digest
            ):
                raise InputError(
                    f"idempotency key {effect.execution_key} was already used with other arguments"
                )
            applied = Applied(
                result=str(earlier["result"]) if earlier is not None else result,
                duplicate=earlier is not None,
            )
            handle.write(_line(effect, digest, applied).encode())
            handle.flush()
            os.fsync(handle.fileno())
            self._index.catch_up(handle, self.path)  # our own line, still under the lock
        return applied


def _slot(tool: object, execution_key: object) -> int:
    """A key's place in the index: 64 bits of a hash of the tool and the key. Two keys
    may share a slot (the line it points to says whose it is)."""
    named = json.dumps([tool, execution_key]).encode()
    return int.from_bytes(hashlib.blake2b(named, digest_size=8).digest(), "big")


@dataclass
class _Index:
    """What this process has read of the file: where the first application of each
    (tool, execution key) begins, by `_slot`; the offset it read to and the lines before
    it. Read again from the start when the file is another one or shorter than that
    offset (replaced or cut)."""

    inode: int = -1
    offset: int = 0
    lines: int = 0
    starts: dict[int, int] = field(default_factory=dict)

    def catch_up(self, handle: IO[bytes], source: Path) -> None:
        """Read what was appended since the last call (`handle` holds the file's lock)."""
        status = os.fstat(handle.fileno())
        if status.st_ino != self.inode or status.st_size < self.offset:
            self.inode, self.offset, self.lines, self.starts = status.st_ino, 0, 0, {}
        handle.seek(self.offset)
        for line in handle:
            record = _record(line, source, self.lines + 1)  # a damaged line stops here
            start = self.offset
            self.lines, self.offset = self.lines + 1, self.offset + len(line)
            if record is None or record.get("duplicate"):
                continue
            self.starts.setdefault(_slot(*_names(record)), start)

    def first(
        self, handle: IO[bytes], source: Path, tool: str, execution_key: str
    ) -> dict[str, Any] | None:
        """The line of the first application of `execution_key` to `tool`, or None (read
        already by `catch_up`, so it parses)."""
        start = self.starts.get(_slot(tool, execution_key))
        if start is None:
            return None
        handle.seek(start)
        record = json.loads(handle.readline())
        if isinstance(record, dict) and _names(record) == (tool, execution_key):
            return record
        handle.seek(0)  # another key's slot (two keys in one: a full read finds it)
        for number, line in enumerate(handle, start=1):
            found = _record(line, source, number)
            wanted = found is not None and _names(found) == (tool, execution_key)
            if wanted and found is not None and not found.get("duplicate"):
                return found
        return None


def _names(record: dict[str, Any]) -> tuple[object, object]:
    return record.get("tool"), record.get("execution_key")


def _parse(text: str, source: Path, *, first_line: int = 1) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=first_line):
        record = _record(line, source, number)
        if record is not None:
            yield record


def _record(line: str | bytes, source: Path, number: int) -> dict[str, Any] | None:
    """Line `number` of the file as an object (None when blank); InputError naming the
    line when it is not one."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise InputError(f"{source}:{number} is not a JSON object; fix or move the effects file")
    return record


def _line(effect: Effect, digest: str, applied: Applied) -> str:
    shown, _ = redact(dict(effect.arguments))
    record = {
        "time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "tool": effect.tool,
        "arguments": shown,
        "arguments_digest": digest,
        "execution_key": effect.execution_key,
        "result": applied.result,
        "auth": token_fingerprint(effect.api_token),
        "duplicate": applied.duplicate,
    }
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
