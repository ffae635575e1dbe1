"""Operator operations on a real SQLite file: cancel (compare-and-set), retention purge,
standing decisions, the runs list's filters and keyset pages, origin filters."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.errors import InputError, RunStateError
from bot.runtime.journal import Fresh
from store import SqliteStore, open_store
from store.crypto import KeyRing
from store.records import RunFilter
from store.schema import bundled_migrations
from tests.store.store_helpers import Clock, make_run, new_approval, raw


async def _paused_run_with_two_approvals(store: SqliteStore) -> None:
    await make_run(store, "run-1")
    await store.add_approvals([new_approval("run-1", "c1"), new_approval("run-1", "c2")])
    await store.vote("ap-run-1-c1", decision="approved", voter="U-A", digest="a" * 64, reason="ok")


async def test_cancel_closes_open_approvals_and_is_audited(store: SqliteStore) -> None:
    await _paused_run_with_two_approvals(store)
    run = await store.get_run("run-1")
    assert run is not None

    outcome = await store.cancel_run(
        "run-1", expected_version=run.version, actor="U-OPS", reason="wrong task", via="cli"
    )

    assert outcome.won
    assert outcome.run.status == "cancelled"
    assert [a.approval_id for a in outcome.closed] == ["ap-run-1-c1", "ap-run-1-c2"]
    assert {a.status for a in outcome.closed} == {"revoked"}
    assert outcome.closed[0].revoke_reason == "run cancelled: wrong task"
    assert outcome.closed[0].decider == "U-A"  # who approved it stays on record
    events = await store.audit_events(run_id="run-1")
    cancelled = [e for e in events if e.kind == "cancelled"]
    assert len(cancelled) == 1
    assert cancelled[0].detail["via"] == "cli"
    assert cancelled[0].detail["from_status"] == "paused"
    assert cancelled[0].detail["closed"] == ["ap-run-1-c1", "ap-run-1-c2"]
    assert (await store.verify_audit()).ok


async def test_cancel_with_a_stale_version_changes_nothing(store: SqliteStore) -> None:
    await _paused_run_with_two_approvals(store)
    run = await store.get_run("run-1")
    assert run is not None
    moved = await store.transition_run("run-1", expected_status="paused", new_status="resuming")
    assert moved is not None

    outcome = await store.cancel_run(
        "run-1", expected_version=run.version, actor="U-OPS", reason="stop"
    )

    assert not outcome.won
    assert outcome.run.status == "resuming"
    assert outcome.closed == ()
    pending = await store.list_approvals(run_id="run-1", status="pending")
    assert [a.approval_id for a in pending] == ["ap-run-1-c2"]
    assert not [e for e in await store.audit_events(run_id="run-1") if e.kind == "cancelled"]


async def test_a_finished_run_cannot_be_cancelled_and_bad_input_is_refused(
    store: SqliteStore,
) -> None:
    await make_run(store, "run-1")
    done = await store.transition_run("run-1", expected_status="paused", new_status="completed")
    assert done is not None
    outcome = await store.cancel_run(
        "run-1", expected_version=done.version, actor="U-OPS", reason="late"
    )
    assert not outcome.won
    assert outcome.run.status == "completed"
    with pytest.raises(InputError, match="say why"):
        await store.cancel_run("run-1", expected_version=done.version, actor="U", reason=" ")
    with pytest.raises(InputError, match="no run"):
        await store.cancel_run("nope", expected_version=1, actor="U", reason="x")


async def test_an_approved_call_that_started_stays_approved_on_cancel(store: SqliteStore) -> None:
    await _paused_run_with_two_approvals(store)
    await store.ledger_claim(
        execution_key="k1",
        arguments_digest="a" * 64,
        run_id="run-1",
        tool_call_id="c1",
        tool_name="deploy_release",
        owner="w1",
        lease_seconds=60,
    )
    run = await store.get_run("run-1")
    assert run is not None

    outcome = await store.cancel_run(
        "run-1", expected_version=run.version, actor="U-OPS", reason="stop"
    )

    assert [a.approval_id for a in outcome.closed] == ["ap-run-1-c2"]
    started = await store.get_approval("ap-run-1-c1")
    assert started is not None
    assert started.status == "approved"


async def test_purge_removes_content_of_old_finished_runs_only(
    store: SqliteStore, clock: Clock, database_url: str
) -> None:
    await make_run(store, "old", state='{"secret-ish": "old state"}')
    await store.add_approvals([new_approval("old", "c1")])
    claim = await store.ledger_claim(
        execution_key="k-old",
        arguments_digest="a" * 64,
        run_id="old",
        tool_call_id="c1",
        tool_name="deploy_release",
        owner="w1",
        lease_seconds=60,
    )
    assert isinstance(claim, Fresh)
    await store.ledger_record_result(
        execution_key="k-old", lease_token=claim.lease_token, result="deployed", is_error=False
    )
    await store.transition_run("old", expected_status="paused", new_status="completed")
    await make_run(store, "paused-old")  # old but not finished: kept
    clock.advance(100 * 86400)
    await make_run(store, "recent")
    await store.transition_run("recent", expected_status="paused", new_status="failed")

    cut = clock.now - timedelta(days=90)
    head = await store.audit_head()
    preview = await store.purge_finished_runs(finished_before=cut, actor="U-OPS", dry_run=True)
    assert (preview.runs, preview.state_blobs, preview.ledger_results, preview.snapshots) == (
        1,
        1,
        1,
        1,
    )
    assert await store.audit_head() == head  # a dry run writes nothing, not even the audit
    assert await store.load_run_state("old") == '{"secret-ish": "old state"}'

    report = await store.purge_finished_runs(finished_before=cut, actor="U-OPS")

    assert (report.runs, report.state_blobs, report.ledger_results, report.snapshots) == (
        1,
        1,
        1,
        1,
    )
    old = await store.get_run("old")
    assert old is not None
    assert old.purged_at == clock.now
    with pytest.raises(RunStateError, match="purged"):
        await store.load_run_state("old")
    assert await store.load_run_state("recent") == '{"n": 1}'
    assert await store.load_run_state("paused-old") == '{"n": 1}'
    approval = await store.get_approval("ap-old-c1")
    assert approval is not None
    assert "service" not in approval.snapshot
    assert approval.arguments_digest == "a" * 64  # the digest stays
    [entry] = await store.ledger_entries(run_id="old")
    assert entry.state == "succeeded"  # the row stays, the result is gone
    with raw(database_url) as connection:
        sealed = connection.execute(
            "SELECT result_ciphertext FROM ledger WHERE execution_key = 'k-old'"
        ).fetchone()
    assert sealed == (None,)
    [purged] = [e for e in await store.audit_events() if e.kind == "purged"]
    assert purged.detail["runs"] == ["old"]
    assert (await store.verify_audit()).ok
    clock.advance(1)
    again = await store.purge_finished_runs(finished_before=clock.now, actor="U-OPS")
    assert again.runs == 1  # "recent" now; "old" is not purged twice


async def test_standing_decisions_one_active_per_tool(store: SqliteStore) -> None:
    await make_run(store, "run-1")
    await store.add_approvals([new_approval("run-1", "c1"), new_approval("run-1", "c2")])
    with pytest.raises(InputError, match="only a decided one"):
        await store.add_standing_decision("ap-run-1-c1")
    await store.vote("ap-run-1-c1", decision="approved", voter="U-A", digest="a" * 64, reason="r")
    first = await store.add_standing_decision("ap-run-1-c1", via="cli")
    assert first.active
    assert first.decision == "approved"
    assert first.decider == "U-A"
    assert await store.add_standing_decision("ap-run-1-c1") == first  # idempotent

    await store.vote("ap-run-1-c2", decision="rejected", voter="U-B", digest="a" * 64, reason="n")
    second = await store.add_standing_decision("ap-run-1-c2")

    [active] = await store.standing_decisions("run-1")
    assert active == second
    old = await store.get_standing_decision("ap-run-1-c1")
    assert old is not None
    assert not old.active
    assert old.revoke_reason is not None
    revoked = await store.revoke_standing_decision("ap-run-1-c2", actor="U-REQ", reason="enough")
    assert revoked is not None
    assert revoked.revoked_by == "U-REQ"
    assert await store.revoke_standing_decision("ap-run-1-c2", actor="U", reason="x") is None
    assert await store.standing_decisions("run-1") == []
    kinds = [e.kind for e in await store.audit_events(run_id="run-1")]
    assert kinds.count("standing_set") == 2
    assert kinds.count("standing_revoked") == 2


async def test_runs_list_filters_and_keyset_pages(store: SqliteStore, clock: Clock) -> None:
    for index in range(7):
        await store.create_run(
            run_id=f"run-{index}",
            agent_name="ops" if index % 2 == 0 else "billing",
            agent_version="1",
            schema_version="1.0",
            state_json="{}",
            status="paused",
            requester="U-A" if index < 4 else "U-B",
            origin="terminal" if index == 6 else "slack",
            task=f"deploy   payments {index}\nnow",
        )
        clock.advance(60)

    newest = await store.list_runs(limit=3)
    assert [r.run_id for r in newest] == ["run-6", "run-5", "run-4"]
    assert newest[0].task == "deploy payments 6 now"
    assert newest[0].origin == "terminal"
    rest = await store.list_runs(limit=10, after=(newest[-1].updated_at, newest[-1].run_id))
    assert [r.run_id for r in rest] == ["run-3", "run-2", "run-1", "run-0"]
    ops_by_a = await store.list_runs(where=RunFilter(agent_name="ops", requester="U-A"))
    assert [r.run_id for r in ops_by_a] == ["run-2", "run-0"]
    since = await store.list_runs(where=RunFilter(updated_since=clock.now - timedelta(minutes=2)))
    assert [r.run_id for r in since] == ["run-6", "run-5"]
    slack = await store.list_runs(where=RunFilter(origin="slack"), limit=1)
    assert [r.run_id for r in slack] == ["run-5"]


async def test_origin_filters_the_pending_list_and_recent_decisions(store: SqliteStore) -> None:
    await make_run(store, "slack-run")
    await store.create_run(
        run_id="demo-run",
        agent_name="ops",
        agent_version="1",
        schema_version="1.0",
        state_json="{}",
        status="paused",
        origin="terminal",
    )
    await store.add_approvals([new_approval("slack-run", "c1"), new_approval("demo-run", "c1")])

    slack_only = await store.pending_page(origin="slack")
    assert [a.run_id for a in slack_only] == ["slack-run"]
    assert len(await store.pending_page()) == 2
    await store.vote("ap-demo-run-c1", decision="approved", voter="U", digest="a" * 64, reason="r")
    assert await store.recent_decisions(origin="slack") == []
    assert [a.run_id for a in await store.recent_decisions(origin="terminal")] == ["demo-run"]


async def test_a_demo_database_from_before_origins_is_migrated(
    engine: str, database_url: str, keyring: KeyRing
) -> None:
    """Runs the demo made before runs had an origin (its requester, no channel) become
    terminal runs; every other run is a Slack run."""
    shipped = bundled_migrations(engine)
    before = [m for m in shipped if "operator_control" not in m.name and m.version < 5]
    with raw(database_url) as connection:
        for migration in before:
            connection.executescript(migration.sql)
        connection.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        for migration in before:
            connection.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00.000000Z')",
                (migration.version, migration.name),
            )
        for run_id, requester, channel in (("d", "demo-requester", None), ("s", "U1", "C1")):
            connection.execute(
                "INSERT INTO runs (run_id, agent_name, agent_version, schema_version, status, "
                "version, state_version, key_id, blob_digest, requester, channel, created_at, "
                "updated_at) VALUES (?, 'ops', '1', '1.0', 'paused', 1, 1, 'k', 'x', ?, ?, "
                "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')",
                (run_id, requester, channel),
            )
    store = await open_store(database_url, keyring=keyring, environ={})
    try:
        demo, slack = await store.get_run("d"), await store.get_run("s")
    finally:
        await store.close()
    assert demo is not None
    assert demo.origin == "terminal"
    assert slack is not None
    assert slack.origin == "slack"
