"""Decision seals in the database: made where votes, standing decisions and requests
are written, checked where the service reads what a decision rests on.

- `SealedDecisions.decision_evidence`: an approval, its request seal and every vote on
  it, each seal checked; what counts is the service's call (bot.service.authority).
- `seal_legacy_rows`: once, by the process that applied migration 0010 at open (the
  one holding the keys): the rows of calls still open (pending, or approved and not yet
  started) get their seals, audited `legacy_sealed`. After that an unsealed row never
  counts.
- `reseal_under_newest`: key rotation re-seals every seal that verifies under an older
  ring key; one that does not verify is left as it is (never laundered) and reported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from bot.clock import Clock
from store.records import (
    FINISHED_RUN_STATUSES,
    ApprovalRecord,
    CheckedVote,
    DecisionEvidence,
    RotationReport,
    SealCheck,
)
from store.rows import APPROVAL_COLUMNS, VOTE_COLUMNS, Row, row_to_approval, row_to_vote, to_db
from store.seals import (
    ESCALATION_PURPOSE,
    REQUEST_PURPOSE,
    SEAL_COLUMNS,
    SNAPSHOT_PURPOSE,
    STAND_IN_PURPOSE,
    STANDING_PURPOSE,
    VOTE_PURPOSE,
    DecisionSeals,
    Seal,
    SealValue,
    approval_request_fields,
    decider_vote,
    escalation_row_fields,
    fields_of_vote,
    read_approval,
    seal_params,
    snapshot_fields,
    stand_in_row_fields,
    standing_row_fields,
    stored_seal,
)
from store.sql import audit
from store.sql.approvals import REVOCABLE
from store.tx import Body, Database, many, run

SEALS_MIGRATION = "0010_decision_seals"
SNAPSHOT_COLUMN_NAMES = ("snapshot_seal_key_id", "snapshot_seal")


class SealedDecisions:
    """`decision_evidence`, and sealing the rows of open calls once after migration 0010."""

    def __init__(
        self,
        database: Database,
        seals: DecisionSeals,
        clock: Clock,
        *,
        missing: dict[str, str] | None = None,
    ) -> None:
        self._db = database
        self._seals = seals
        self._clock = clock
        self._missing = {} if missing is None else missing  # key id -> where (readiness)

    async def decision_evidence(self, approval_id: str) -> DecisionEvidence | None:
        row = await self._db.read_one(
            f"SELECT {APPROVAL_COLUMNS}, {SEAL_COLUMNS} FROM approvals WHERE approval_id = ?",
            (approval_id,),
        )
        if row is None:
            return None
        approval = read_approval(self._seals, row)
        request = self._request_seal(approval, row)
        rows = await self._db.read(
            f"SELECT {VOTE_COLUMNS}, {SEAL_COLUMNS} FROM approval_votes "
            "WHERE approval_id = ? ORDER BY at, voter",
            (approval_id,),
        )
        votes = tuple(self._checked(approval, vote_row) for vote_row in rows)
        unknown = [
            found["seal_key_id"]
            for found in (row, *rows)
            if found["seal_key_id"] is not None
            and self._seals.keyring.get(found["seal_key_id"]) is None
        ]
        snapshot_key = row["snapshot_seal_key_id"]
        if snapshot_key is not None and self._seals.keyring.get(snapshot_key) is None:
            unknown.append(snapshot_key)
        for key_id in unknown:
            self._missing.setdefault(key_id, f"a seal on approval {approval_id}")
        return DecisionEvidence(
            approval=approval,
            request_seal=request,
            votes=votes,
            unknown_key_ids=tuple(sorted(set(unknown))),
        )

    async def run_approvals(
        self, run_id: str, *, limit: int
    ) -> tuple[list[ApprovalRecord], SealCheck | None]:
        """The run's approvals as `list_approvals(run_id=...)` lists them, and the request
        seal of the newest (the latest `created_at`, the first listed of a tie), checked
        on the same read (None: no approval)."""
        rows = await self._db.read(
            f"SELECT {APPROVAL_COLUMNS}, {SEAL_COLUMNS} FROM approvals WHERE run_id = ? "
            "ORDER BY created_at, approval_id LIMIT ?",
            (run_id, limit),
        )
        approvals = [read_approval(self._seals, row) for row in rows]
        if not approvals:
            return approvals, None
        newest = max(range(len(approvals)), key=lambda index: approvals[index].created_at)
        request = self._request_seal(approvals[newest], rows[newest])
        key_id = rows[newest]["seal_key_id"]
        if request == "unknown_key" and key_id is not None:
            self._missing.setdefault(key_id, f"a seal on approval {approvals[newest].approval_id}")
        return approvals, request

    def _request_seal(self, approval: ApprovalRecord, row: Row) -> SealCheck:
        seal = stored_seal(row["seal_key_id"], row["seal"])
        return self._seals.check(REQUEST_PURPOSE, approval_request_fields(approval), seal)

    def _checked(self, approval: ApprovalRecord, row: Row) -> CheckedVote:
        vote = row_to_vote(row)
        seal = stored_seal(row["seal_key_id"], row["seal"])
        check = self._seals.check(VOTE_PURPOSE, fields_of_vote(approval, vote), seal)
        return CheckedVote(vote=vote, seal=check)

    async def seal_legacy_rows(self) -> None:
        """Seal the unsealed rows of calls still open; see the module doc. Run only by
        the open that applied migration 0010."""
        await self._db.transact(_LegacySealing(seals=self._seals, at=self._clock()).body)


@dataclass(kw_only=True)
class _LegacySealing:
    """The body sealing legacy rows, and what it sealed."""

    seals: DecisionSeals
    at: datetime
    approvals: int = 0
    votes: int = 0
    deciders: int = 0
    standing: int = 0
    approval_ids: list[str] = field(default_factory=list)

    def body(self) -> Body[None]:
        rows = yield many(
            f"SELECT {APPROVAL_COLUMNS} FROM approvals WHERE seal IS NULL AND {REVOCABLE} "
            "ORDER BY created_at, approval_id"
        )
        for row in rows:
            approval = row_to_approval(row)
            yield from self._seal_approval(approval)
            self.approval_ids.append(approval.approval_id)
        yield from self._seal_standing()
        yield from audit.append(
            "legacy_sealed",
            at=self.at,
            actor="store",
            run_id=None,
            approval_id=None,
            detail={
                "approvals": self.approvals,
                "votes": self.votes,
                "decider_votes": self.deciders,
                "standing_decisions": self.standing,
                "approval_ids": self.approval_ids,
            },
        )

    def _seal_approval(self, approval: ApprovalRecord) -> Body[None]:
        seal = self.seals.seal(REQUEST_PURPOSE, approval_request_fields(approval))
        yield run(
            "UPDATE approvals SET seal_key_id = ?, seal = ? WHERE approval_id = ?",
            (*seal_params(seal), approval.approval_id),
        )
        self.approvals += 1
        votes = yield many(
            f"SELECT {VOTE_COLUMNS} FROM approval_votes WHERE approval_id = ?",
            (approval.approval_id,),
        )
        for vote_row in votes:
            vote = row_to_vote(vote_row)
            vote_seal_ = self.seals.seal(VOTE_PURPOSE, fields_of_vote(approval, vote))
            yield run(
                "UPDATE approval_votes SET seal_key_id = ?, seal = ? "
                "WHERE approval_id = ? AND voter = ? AND digest = ? AND seal IS NULL",
                (*seal_params(vote_seal_), vote.approval_id, vote.voter, vote.digest),
            )
            self.votes += 1
        if not votes and approval.status == "approved" and approval.decider is not None:
            yield from self._decider_vote(approval, approval.decider)

    def _decider_vote(self, approval: ApprovalRecord, decider: str) -> Body[None]:
        """An approval decided before votes existed: its decider's decision becomes the
        vote it stood for."""
        vote = decider_vote(approval, to_db(approval.decided_at or approval.created_at))
        seal = self.seals.seal(VOTE_PURPOSE, fields_of_vote(approval, vote))
        yield run(
            f"INSERT INTO approval_votes ({VOTE_COLUMNS}, {SEAL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (vote.approval_id, decider, vote.decision, vote.digest, vote.reason,
             to_db(vote.at), *seal_params(seal)),
        )  # fmt: skip
        self.deciders += 1

    def _seal_standing(self) -> Body[None]:
        finished = ", ".join(f"'{status}'" for status in sorted(FINISHED_RUN_STATUSES))
        rows = yield many(
            "SELECT s.approval_id, s.run_id, s.tool_name, s.decision, s.decider, s.message, "
            "s.created_at FROM standing_decisions s JOIN runs r ON r.run_id = s.run_id "
            f"WHERE s.seal IS NULL AND s.revoked_at IS NULL AND r.status NOT IN ({finished})"
        )
        for row in rows:
            seal = self.seals.seal(STANDING_PURPOSE, standing_row_fields(row))
            yield run(
                "UPDATE standing_decisions SET seal_key_id = ?, seal = ? WHERE approval_id = ?",
                (*seal_params(seal), row["approval_id"]),
            )
            self.standing += 1


@dataclass(frozen=True, kw_only=True)
class _Reseal:
    sql: str  # UPDATE ... SET seal_key_id = ?, seal = ? WHERE <row> AND seal = ?
    where: tuple[object, ...]
    old_mac: str
    seal: Seal


class SealRotation:
    """Re-seals every seal that verifies under an older ring key with the newest one."""

    def __init__(self, database: Database, seals: DecisionSeals) -> None:
        self._db = database
        self._seals = seals

    async def reseal(self, report: RotationReport, batch_size: int) -> None:
        newest = self._seals.keyring.newest.key_id
        after = ""
        while True:
            rows = await self._db.read(
                "SELECT approval_id FROM approvals WHERE approval_id > ? AND "
                "(seal_key_id <> ? OR snapshot_seal_key_id <> ? OR EXISTS (SELECT 1 FROM "
                "approval_votes v WHERE v.approval_id = approvals.approval_id "
                "AND v.seal_key_id <> ?)) ORDER BY approval_id LIMIT ?",
                (after, newest, newest, newest, batch_size),
            )
            if not rows:
                break
            after = rows[-1]["approval_id"]
            batch: list[_Reseal] = []
            for row in rows:
                batch += await self._approval_reseals(row["approval_id"], report)
            report.seals += await self._db.transact(functools.partial(_write, batch))
        await self._reseal_standing(report, newest)
        await self._reseal_rows(report, newest, _STAND_INS)
        await self._reseal_rows(report, newest, _ESCALATIONS)

    async def _approval_reseals(self, approval_id: str, report: RotationReport) -> list[_Reseal]:
        newest = self._seals.keyring.newest.key_id
        row = await self._db.read_one(
            f"SELECT {APPROVAL_COLUMNS}, {SEAL_COLUMNS} FROM approvals WHERE approval_id = ?",
            (approval_id,),
        )
        if row is None:
            return []
        approval = row_to_approval(row)
        found: list[_Reseal] = []
        old = stored_seal(row["seal_key_id"], row["seal"])
        if old is not None and old.key_id != newest:
            fields = approval_request_fields(approval)
            found += self._one(report, f"request seal {approval_id}", REQUEST_PURPOSE, fields,
                               old, "approvals", ("approval_id",), (approval_id,))  # fmt: skip
        shown = stored_seal(row["snapshot_seal_key_id"], row["snapshot_seal"])
        if shown is not None and shown.key_id != newest:
            fields = snapshot_fields(approval_id=approval_id,
                                     arguments_digest=row["arguments_digest"],
                                     snapshot=row["snapshot"])  # fmt: skip
            found += self._one(report, f"snapshot seal {approval_id}", SNAPSHOT_PURPOSE,
                               fields, shown, "approvals", ("approval_id",), (approval_id,),
                               columns=SNAPSHOT_COLUMN_NAMES)  # fmt: skip
        votes = await self._db.read(
            f"SELECT {VOTE_COLUMNS}, {SEAL_COLUMNS} FROM approval_votes "
            "WHERE approval_id = ? AND seal_key_id <> ?",
            (approval_id, newest),
        )
        for vote_row in votes:
            vote = row_to_vote(vote_row)
            old_vote = stored_seal(vote_row["seal_key_id"], vote_row["seal"])
            found += self._one(report, f"vote seal {approval_id} {vote.voter}", VOTE_PURPOSE,
                               fields_of_vote(approval, vote), old_vote, "approval_votes",
                               ("approval_id", "voter", "digest"),
                               (approval_id, vote.voter, vote.digest))  # fmt: skip
        return found

    async def _reseal_standing(self, report: RotationReport, newest: str) -> None:
        rows = await self._db.read(
            "SELECT approval_id, run_id, tool_name, decision, decider, message, created_at, "
            f"{SEAL_COLUMNS} FROM standing_decisions WHERE seal_key_id <> ?",
            (newest,),
        )
        batch: list[_Reseal] = []
        for row in rows:
            old = stored_seal(row["seal_key_id"], row["seal"])
            batch += self._one(report, f"standing seal {row['approval_id']}", STANDING_PURPOSE,
                               standing_row_fields(row), old, "standing_decisions",
                               ("approval_id",), (row["approval_id"],))  # fmt: skip
        report.seals += await self._db.transact(functools.partial(_write, batch))

    async def _reseal_rows(self, report: RotationReport, newest: str, table: _Sealed) -> None:
        """Re-seal a table's rows sealed under an older key (a table whose rows are
        sealed over their own columns only)."""
        rows = await self._db.read(f"SELECT * FROM {table.name} WHERE seal_key_id <> ?", (newest,))
        batch: list[_Reseal] = []
        for row in rows:
            key = tuple(row[column] for column in table.key)
            named = " ".join(str(value) for value in key)
            batch += self._one(report, f"{table.what} seal {named}", table.purpose,
                               table.fields(row), stored_seal(row["seal_key_id"], row["seal"]),
                               table.name, table.key, key)  # fmt: skip
        report.seals += await self._db.transact(functools.partial(_write, batch))

    def _one(
        self,
        report: RotationReport,
        name: str,
        purpose: str,
        fields: dict[str, SealValue],
        old: Seal | None,
        table: str,
        key_columns: tuple[str, ...],
        key: tuple[object, ...],
        *,
        columns: tuple[str, str] = ("seal_key_id", "seal"),
    ) -> list[_Reseal]:
        if old is None:
            return []
        if self._seals.check(purpose, fields, old) != "valid":
            report.tampered.append(name)  # never re-sealed: that would launder it
            return []
        where = " AND ".join(f"{column} = ?" for column in key_columns)
        key_id, mac = columns
        sql = f"UPDATE {table} SET {key_id} = ?, {mac} = ? WHERE {where} AND {mac} = ?"
        return [
            _Reseal(sql=sql, where=key, old_mac=old.mac, seal=self._seals.seal(purpose, fields))
        ]


@dataclass(frozen=True, kw_only=True)
class _Sealed:
    name: str
    what: str
    purpose: str
    key: tuple[str, ...]
    fields: Callable[[Row], dict[str, SealValue]]


_STAND_INS = _Sealed(
    name="stand_ins", what="stand-in", purpose=STAND_IN_PURPOSE,
    key=("away_user", "created_at"), fields=stand_in_row_fields,
)  # fmt: skip
_ESCALATIONS = _Sealed(
    name="approval_escalations", what="escalation", purpose=ESCALATION_PURPOSE,
    key=("approval_id", "step"), fields=escalation_row_fields,
)  # fmt: skip


def _write(batch: list[_Reseal]) -> Body[int]:
    written = 0
    for item in batch:
        rows = yield many(
            item.sql + " RETURNING 1",
            (item.seal.key_id, item.seal.mac, *item.where, item.old_mac),
        )
        written += len(rows)
    return written
