"""Stand-ins: an approver away until a time, and who decides in their place meanwhile.

At most one absence is open per person (a partial unique index); a new one ends the
open one in the same transaction. Each is sealed when set (store.seals: who is away,
from and until when, who stands in), and every read says what its seal showed
(`StandIn.seal`): only a valid one makes a stand-in eligible. Ending one early (`/approvals
back`) only takes away, so it is not sealed. Audited `away_set` and `away_ended`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.audit import with_via
from store.records import StandIn
from store.rows import Row, from_db, from_db_optional, to_db
from store.seals import (
    SEAL_COLUMNS,
    STAND_IN_PURPOSE,
    DecisionSeals,
    seal_params,
    stand_in_fields,
    stand_in_row_fields,
    stored_seal,
)
from store.sql import audit
from store.tx import Body, Database, one

COLUMNS = "away_user, created_at, stand_in, until, ended_at, ended_by"
SELECTED = f"{COLUMNS}, {SEAL_COLUMNS}"
COVERING = "created_at <= ? AND until > ? AND (ended_at IS NULL OR ended_at > ?)"
"""The rows whose absence held at a time (the time, three times)."""
MAX_LOOKUP = 500


class StandIns:
    """The StandInStore."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._clock = clock
        self._seals = seals

    async def set_stand_in(
        self, away_user: str, *, stand_in: str | None, until: datetime, via: str | None = None
    ) -> StandIn:
        at = self._clock()
        if not away_user.strip() or (stand_in is not None and not stand_in.strip()):
            raise InputError("an absence needs the person's id (and the stand-in's, if any)")
        if stand_in == away_user:
            raise InputError("you cannot stand in for yourself; name someone else")
        if until <= at:
            raise InputError(f"{to_db(until)} has passed; say until when you will be away")
        created, ends = to_db(at), to_db(until)
        seal = self._seals.seal(
            STAND_IN_PURPOSE,
            stand_in_fields(away_user=away_user, stand_in=stand_in, created_at=created, until=ends),
        )

        def body() -> Body[StandIn]:
            yield from _end_open(away_user, at, actor=away_user, via=via, why="replaced")
            row = yield one(
                f"INSERT INTO stand_ins ({SELECTED}) VALUES (?, ?, ?, ?, NULL, NULL, ?, ?) "
                f"RETURNING {SELECTED}",
                (away_user, created, stand_in, ends, *seal_params(seal)),
            )
            assert row is not None
            yield from audit.append(
                "away_set",
                at=at,
                actor=away_user,
                run_id=None,
                approval_id=None,
                detail=with_via({"stand_in": stand_in, "until": ends}, via),
            )
            return self._checked(row)

        return await self._db.transact(body)

    async def end_stand_in(
        self, away_user: str, *, actor: str, via: str | None = None
    ) -> StandIn | None:
        at = self._clock()

        def body() -> Body[Row | None]:
            return (yield from _end_open(away_user, at, actor=actor, via=via, why="back"))

        ended = await self._db.transact(body)
        return None if ended is None else self._checked(ended)

    async def stand_ins_of(self, users: Sequence[str], *, at: datetime) -> dict[str, StandIn]:
        """The absence of each of `users` that holds at `at` (those away only)."""
        found: dict[str, StandIn] = {}
        wanted = sorted(set(users))
        for start in range(0, len(wanted), MAX_LOOKUP):
            chunk = wanted[start : start + MAX_LOOKUP]
            marks = ", ".join("?" for _ in chunk)
            rows = await self._db.read(
                f"SELECT {SELECTED} FROM stand_ins WHERE away_user IN ({marks}) AND {COVERING} "
                "ORDER BY created_at",
                (*chunk, *_thrice(at)),
            )
            found.update({row["away_user"]: self._checked(row) for row in rows})
        return found

    async def standing_in_for(self, stand_in: str, *, at: datetime) -> list[StandIn]:
        """The absences `stand_in` stands in for at `at`, oldest first."""
        rows = await self._db.read(
            f"SELECT {SELECTED} FROM stand_ins WHERE stand_in = ? AND {COVERING} "
            "ORDER BY created_at LIMIT ?",
            (stand_in, *_thrice(at), MAX_LOOKUP),
        )
        return [self._checked(row) for row in rows]

    def _checked(self, row: Row) -> StandIn:
        seal = self._seals.check(
            STAND_IN_PURPOSE,
            stand_in_row_fields(row),
            stored_seal(row["seal_key_id"], row["seal"]),
        )
        return replace(_record(row), seal=seal)


def _thrice(at: datetime) -> tuple[str, str, str]:
    text = to_db(at)
    return text, text, text


def _record(row: Row) -> StandIn:
    return StandIn(
        away_user=row["away_user"],
        stand_in=row["stand_in"],
        created_at=from_db(row["created_at"]),
        until=from_db(row["until"]),
        ended_at=from_db_optional(row["ended_at"]),
        ended_by=row["ended_by"],
    )


def _end_open(
    away_user: str, at: datetime, *, actor: str, via: str | None, why: str
) -> Body[Row | None]:
    """End the person's open absence, if any (audited `away_ended`); the row, or None."""
    row = yield one(
        f"UPDATE stand_ins SET ended_at = ?, ended_by = ? WHERE away_user = ? AND ended_at IS NULL "
        f"RETURNING {SELECTED}",
        (to_db(at), actor, away_user),
    )
    if row is None:
        return None
    yield from audit.append(
        "away_ended",
        at=at,
        actor=actor,
        run_id=None,
        approval_id=None,
        detail=with_via({"away_user": away_user, "stand_in": row["stand_in"], "why": why}, via),
    )
    ended: Row = row
    return ended
