"""Approval windows: an approved call's approval made to cover later matching calls of
its tool for a while (bot.service.windows says what covers what).

A window is keyed by the approval that opened it. The matched argument values are
never stored: the store keeps a keyed MAC of them (`match_digest`, made with the ring
key its seal names) and answers whether another call's values give the same MAC
(`window_matches`). Each window is sealed when opened (store.seals: tool, match fields
and digest, approver, opening, expiry, the policy's length), and every read says what
its seal showed (`ApprovalWindow.seal`): only a valid one may cover a call. Audited
`window_opened` and `window_revoked`; revoking only takes away, so it is not sealed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import ApprovalWindow
from store.rows import Row, from_db, from_db_optional, row_to_approval, to_db
from store.seals import (
    SEAL_COLUMNS,
    WINDOW_MATCH_PURPOSE,
    WINDOW_PURPOSE,
    DecisionSeals,
    Seal,
    seal_params,
    stored_seal,
    window_fields,
    window_match_fields,
    window_row_fields,
)
from store.sql import audit
from store.sql.approvals import SELECT_ONE
from store.tx import Body, Database, one

COLUMNS = (
    "window_id, run_id, tool_name, match_fields, match_digest, decider, reason, created_at, "
    "expires_at, lasts_seconds, revoked_at, revoked_by, revoke_reason"
)
SELECTED = f"{COLUMNS}, {SEAL_COLUMNS}"
OPEN = "revoked_at IS NULL AND expires_at > ?"
MAX_LISTED = 200


class Windows:
    """The WindowStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def open_window(
        self,
        approval_id: str,
        *,
        match_fields: tuple[str, ...],
        match_values: str,
        lasts: timedelta,
        via: str | None = None,
    ) -> ApprovalWindow:
        at = self._clock()
        seconds = int(lasts.total_seconds())
        if seconds <= 0:
            raise InputError("a window must last longer than zero")
        created, expires = to_db(at), to_db(at + timedelta(seconds=seconds))
        fields_text = json.dumps(list(match_fields), separators=(",", ":"))

        def body() -> Body[ApprovalWindow]:
            found = yield one(SELECT_ONE, (approval_id,))
            if found is None:
                raise InputError(f"there is no approval with id {approval_id!r}")
            approval = row_to_approval(found)
            if approval.status != "approved" or approval.decider is None:
                raise InputError(
                    f"approval {approval_id} is {approval.status}; only an approved call "
                    "opens a window"
                )
            existing = yield one(
                f"SELECT {SELECTED} FROM approval_windows WHERE window_id = ?", (approval_id,)
            )
            if existing is not None:
                return self._checked(existing)
            match = self._seals.seal(
                WINDOW_MATCH_PURPOSE,
                window_match_fields(tool_name=approval.tool_name, values=match_values),
            )
            seal = self._seals.seal(
                WINDOW_PURPOSE,
                window_fields(
                    window_id=approval_id, run_id=approval.run_id, tool_name=approval.tool_name,
                    match_fields=fields_text, match_digest=match.mac, decider=approval.decider,
                    created_at=created, expires_at=expires, lasts_seconds=seconds,
                ),
            )  # fmt: skip
            if seal.key_id != match.key_id:  # one newest key made both
                raise InputError("the key ring changed while the window was opened; try again")
            row = yield one(
                f"INSERT INTO approval_windows ({SELECTED}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?) "
                f"RETURNING {SELECTED}",
                (approval_id, approval.run_id, approval.tool_name, fields_text, match.mac,
                 approval.decider, approval.reason, created, expires, seconds,
                 *seal_params(seal)),
            )  # fmt: skip
            assert row is not None
            window = self._checked(row)
            yield from _audit("window_opened", window, at, via=via, actor=window.decider,
                              detail={"match_fields": list(match_fields), "until": expires,
                                      "reason": window.reason})  # fmt: skip
            return window

        return await self._db.transact(body)

    async def open_windows(self, tool_name: str, *, at: datetime) -> list[ApprovalWindow]:
        """The windows of `tool_name` open at `at` (not revoked, not expired), oldest
        first, each saying what its seal showed."""
        rows = await self._db.read(
            f"SELECT {SELECTED} FROM approval_windows WHERE tool_name = ? AND {OPEN} "
            "ORDER BY created_at, window_id LIMIT ?",
            (tool_name, to_db(at), MAX_LISTED),
        )
        return [self._checked(row) for row in rows]

    async def all_open_windows(self, *, at: datetime, limit: int = 50) -> list[ApprovalWindow]:
        """Every window open at `at`, soonest to end first."""
        rows = await self._db.read(
            f"SELECT {SELECTED} FROM approval_windows WHERE {OPEN} "
            "ORDER BY expires_at, window_id LIMIT ?",
            (to_db(at), min(limit, MAX_LISTED)),
        )
        return [self._checked(row) for row in rows]

    async def get_window(self, window_id: str) -> ApprovalWindow | None:
        row = await self._db.read_one(
            f"SELECT {SELECTED} FROM approval_windows WHERE window_id = ?", (window_id,)
        )
        return None if row is None else self._checked(row)

    async def window_matches(self, window_id: str, *, match_values: str) -> bool:
        """Do `match_values` (canonical JSON of a call's matched fields) give the window's
        match digest? False for an unknown window or one whose key the ring lacks."""
        row = await self._db.read_one(
            "SELECT tool_name, match_digest, seal_key_id FROM approval_windows WHERE window_id = ?",
            (window_id,),
        )
        if row is None or not row["seal_key_id"] or not row["match_digest"]:
            return False
        fields = window_match_fields(tool_name=row["tool_name"], values=match_values)
        digest = Seal(key_id=row["seal_key_id"], mac=row["match_digest"])
        return self._seals.check(WINDOW_MATCH_PURPOSE, fields, digest) == "valid"

    async def revoke_window(
        self, window_id: str, *, actor: str, reason: str, via: str | None = None
    ) -> ApprovalWindow | None:
        if not actor.strip():
            raise InputError("a revocation needs the actor's id")
        at = self._clock()

        def body() -> Body[ApprovalWindow | None]:
            row = yield one(
                "UPDATE approval_windows SET revoked_at = ?, revoked_by = ?, revoke_reason = ? "
                f"WHERE window_id = ? AND revoked_at IS NULL RETURNING {SELECTED}",
                (to_db(at), actor, reason, window_id),
            )
            if row is None:
                return None
            window = self._checked(row)
            yield from _audit("window_revoked", window, at, via=via, actor=actor,
                              detail={"reason": reason})  # fmt: skip
            return window

        return await self._db.transact(body)

    def _checked(self, row: Row) -> ApprovalWindow:
        seal = self._seals.check(
            WINDOW_PURPOSE, window_row_fields(row), stored_seal(row["seal_key_id"], row["seal"])
        )
        return replace(_record(row), seal=seal)


def _record(row: Row) -> ApprovalWindow:
    fields = json.loads(row["match_fields"])
    return ApprovalWindow(
        window_id=row["window_id"],
        run_id=row["run_id"],
        tool_name=row["tool_name"],
        match_fields=tuple(str(f) for f in fields) if isinstance(fields, list) else (),
        decider=row["decider"],
        reason=row["reason"],
        created_at=from_db(row["created_at"]),
        expires_at=from_db(row["expires_at"]),
        lasts=timedelta(seconds=int(row["lasts_seconds"])),
        revoked_at=from_db_optional(row["revoked_at"]),
        revoked_by=row["revoked_by"],
        revoke_reason=row["revoke_reason"],
    )


def _audit(
    kind: str,
    window: ApprovalWindow,
    at: datetime,
    *,
    via: str | None,
    actor: str,
    detail: dict[str, object],
) -> Body[None]:
    yield from audit.append(
        kind,
        at=at,
        actor=actor,
        run_id=window.run_id,
        approval_id=window.window_id,
        detail=with_via({"tool": window.tool_name, **detail}, via),
    )
