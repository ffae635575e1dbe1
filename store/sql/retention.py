"""Retention: purge what finished runs carry, keep what the audit needs.

A finished run (completed, failed, cancelled) older than the cut loses, in batches of
one write transaction each: its sealed state (`run_blobs`), its ledger results (the
sealed tool outputs), its approvals' review snapshots (the redacted arguments; the
digests stay) and its task line. What stays: the run, approval, vote and ledger rows
(who decided what, when, which call ran with which key) and the whole audit log, to
which each batch adds one `purged` event naming its runs, so `audit verify` still
passes and says what was removed and when.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from bot.clock import Clock
from bot.errors import InputError
from store.records import FINISHED_RUN_STATUSES, PurgeReport
from store.rows import to_db
from store.seals import DecisionSeals, seal_params, seal_snapshot
from store.sql import audit
from store.tx import Body, Database, many, placeholders, run

PURGED_NOTE = "(purged by retention)"


def purged_snapshot(tool_name: str, arguments_digest: str) -> str:
    """The review snapshot JSON an approval keeps once retention purged its run: the
    tool and the digest, no arguments (it still reads as a review snapshot)."""
    return json.dumps(
        {
            "tool_name": tool_name,
            "arguments": {},
            "redacted_paths": [],
            "omitted_fields": [PURGED_NOTE],
            "digest": arguments_digest,
            "purged": True,
        },
        sort_keys=True,
    )


_FINISHED = ", ".join(f"'{status}'" for status in sorted(FINISHED_RUN_STATUSES))
_PURGEABLE = f"status IN ({_FINISHED}) AND updated_at < ? AND purged_at IS NULL"
_PURGEABLE_IDS = f"SELECT run_id FROM runs WHERE {_PURGEABLE}"
MAX_BATCH = 500  # run ids per `IN (...)`, well under SQLite's and Postgres's limits


class Retention:
    """`purge_finished_runs` (part of the RunStore)."""

    def __init__(self, database: Database, clock: Clock, seals: DecisionSeals) -> None:
        self._db = database
        self._seals = seals
        self._clock = clock

    async def purge_finished_runs(
        self,
        *,
        finished_before: datetime,
        actor: str,
        batch_size: int = 200,
        dry_run: bool = False,
    ) -> PurgeReport:
        if dry_run:
            return await self._what_would_go(finished_before)
        if not 1 <= batch_size <= MAX_BATCH:
            raise InputError(f"a purge batch holds 1 to {MAX_BATCH} runs, not {batch_size}")
        if not actor.strip():
            raise InputError("a purge needs the actor's id")
        cut = to_db(finished_before)
        report = PurgeReport(finished_before=finished_before)
        while True:
            batch = await self._db.transact(
                lambda: _purge_batch(
                    self._seals, cut=cut, actor=actor, at=self._clock(), limit=batch_size
                )
            )
            if batch.runs == 0:
                return report
            report = replace(
                report,
                runs=report.runs + batch.runs,
                state_blobs=report.state_blobs + batch.state_blobs,
                ledger_results=report.ledger_results + batch.ledger_results,
                snapshots=report.snapshots + batch.snapshots,
            )

    async def _what_would_go(self, finished_before: datetime) -> PurgeReport:
        """What a purge would remove now, counted in one read (nothing is written)."""
        row = await self._db.read_one(
            f"SELECT (SELECT COUNT(*) FROM runs WHERE {_PURGEABLE}) AS runs, "
            f"(SELECT COUNT(*) FROM run_blobs WHERE run_id IN ({_PURGEABLE_IDS})) AS blobs, "
            "(SELECT COUNT(*) FROM ledger WHERE result_ciphertext IS NOT NULL "
            f"AND run_id IN ({_PURGEABLE_IDS})) AS results, "
            f"(SELECT COUNT(*) FROM approvals WHERE run_id IN ({_PURGEABLE_IDS})) AS snapshots",
            (to_db(finished_before),) * 4,
        )
        assert row is not None  # a SELECT of counts answers one row
        return PurgeReport(
            finished_before=finished_before,
            runs=int(row["runs"]),
            state_blobs=int(row["blobs"]),
            ledger_results=int(row["results"]),
            snapshots=int(row["snapshots"]),
        )


def _purge_batch(
    seals: DecisionSeals, *, cut: str, actor: str, at: datetime, limit: int
) -> Body[PurgeReport]:
    rows = yield many(
        f"SELECT run_id FROM runs WHERE {_PURGEABLE} ORDER BY updated_at, run_id LIMIT ? "
        "FOR UPDATE",
        (cut, limit),
    )
    run_ids = [str(row["run_id"]) for row in rows]
    report = PurgeReport(finished_before=datetime.fromisoformat(cut))
    if not run_ids:
        return report
    marks = placeholders(len(run_ids))
    blobs = yield many(f"DELETE FROM run_blobs WHERE run_id IN ({marks}) RETURNING run_id", run_ids)
    results = yield many(
        "UPDATE ledger SET result_key_id = NULL, result_nonce = NULL, result_ciphertext = NULL "
        f"WHERE run_id IN ({marks}) AND result_ciphertext IS NOT NULL RETURNING execution_key",
        run_ids,
    )
    snapshots = 0
    approvals = yield many(
        f"SELECT approval_id, tool_name, arguments_digest FROM approvals WHERE run_id IN ({marks})",
        run_ids,
    )
    for row in approvals:
        snapshot = purged_snapshot(row["tool_name"], row["arguments_digest"])
        seal = seal_snapshot(
            seals,
            approval_id=row["approval_id"],
            arguments_digest=row["arguments_digest"],
            snapshot=snapshot,
        )
        yield run(
            "UPDATE approvals SET snapshot = ?, snapshot_seal_key_id = ?, snapshot_seal = ? "
            "WHERE approval_id = ?",
            (snapshot, *seal_params(seal), row["approval_id"]),
        )
        snapshots += 1
    yield run(
        f"UPDATE runs SET purged_at = ?, task = NULL WHERE run_id IN ({marks})",
        [to_db(at), *run_ids],
    )
    report = replace(
        report,
        runs=len(run_ids),
        state_blobs=len(blobs),
        ledger_results=len(results),
        snapshots=snapshots,
    )
    yield from audit.append(
        "purged",
        at=at,
        actor=actor,
        detail={
            "finished_before": cut,
            "runs": run_ids,
            "state_blobs": report.state_blobs,
            "ledger_results": report.ledger_results,
            "snapshots": report.snapshots,
        },
    )
    return report
