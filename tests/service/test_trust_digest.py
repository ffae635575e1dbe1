"""The trust boundary in the service: keyed digests, an approval bound to its tool, a
hidden value that stays hidden through an edit, and expiry checked at execution time.

Real SQLite file, real AES-GCM, real runtime; the notifier is the only fake.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.canonical import canonical_arguments
from bot.credentials import REDACTED
from bot.errors import ContextSerializationError
from bot.runtime import (
    CURRENT_SCHEMA_VERSION,
    Agent,
    AgentRegistry,
    InMemoryJournal,
    ScriptedModel,
    tool,
)
from bot.runtime.journal import Fresh, Recorded
from bot.service.last_check import ServiceJournal
from store.audit import event_to_json_line
from tests.service.governance_helpers import Clock, audit_of, policy
from tests.service.service_harness import (
    APPROVER,
    REQUESTER,
    Harness,
    close_harness,
    open_service,
    start,
)
from tests.states import own_state

PASSWORD_TASK = "set payments db_password=Summer2024!"
PASSWORD_ARGS = {"service": "payments", "key": "db_password", "value": "Summer2024!"}
WORDLIST = ["password", "hunter2", "Winter2023!", "Summer2024!", "letmein"]


def unkeyed_digests(arguments: dict[str, Any], field: str, guesses: list[str]) -> list[str]:
    """What an attacker computes: SHA-256 of the canonical arguments for each guess."""
    return [
        hashlib.sha256(canonical_arguments({**arguments, field: guess})).hexdigest()
        for guess in guesses
    ]


# -- keyed digests (the card's digest is no password oracle) --------------------------


async def test_the_same_call_in_two_deployments_shows_unrelated_digests(
    tmp_path: Path, effects_path: Path
) -> None:
    digests = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        harness = await open_service(tmp_path / name / "approvals.db", effects_path)
        try:
            run = await start(harness, PASSWORD_TASK)
            [(approval, snapshot)] = harness.notifier.cards
            state = await own_state(harness.service, run.run_id)
            [call] = state.pending_calls()
            assert call.arguments == PASSWORD_ARGS
            assert snapshot.digest == approval.arguments_digest == state.call_digest(call)
            assert snapshot.arguments["value"] == REDACTED
            digests.append(snapshot.digest)
        finally:
            await close_harness(harness)
    assert digests[0] != digests[1]
    assert not set(digests) & set(unkeyed_digests(PASSWORD_ARGS, "value", WORDLIST))


async def test_no_card_export_or_database_copy_confirms_a_guessed_password(
    harness: Harness, db_path: Path
) -> None:
    """A channel member with a wordlist, an auditor with an export, an operator with a
    copy of the database file (and not the keys): none of them can test a guess."""
    run = await start(harness, PASSWORD_TASK)
    [(approval, snapshot)] = harness.notifier.cards
    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()
    assert harness.notifier.answer(run.run_id)
    guesses = unkeyed_digests(PASSWORD_ARGS, "value", WORDLIST)
    card = snapshot.render_text() + snapshot.digest
    export = "".join(event_to_json_line(e) for e in await harness.store.audit_events())
    assert '"execution_key"' in export  # the export is not empty
    effects = harness.effects.read_text()
    [line] = harness.effect_lines()
    assert line["arguments_digest"] == approval.arguments_digest  # what the card showed

    while_open = _database_bytes(db_path)
    await close_harness(harness)
    after_close = _database_bytes(db_path)
    for where, text in (("card", card), ("export", export), ("effects", effects)):
        assert "Summer2024!" not in text, where
        assert not [guess for guess in guesses if guess in text], where
    for raw in (while_open, after_close):
        assert b"Summer2024!" not in raw
        assert not [guess for guess in guesses if guess.encode() in raw]
        assert not [guess for guess in guesses if bytes.fromhex(guess) in raw]  # nor binary
        assert approval.arguments_digest.encode() in raw  # the keyed one is there, and only it


def _database_bytes(db_path: Path) -> bytes:
    """Every byte of the database, its WAL and shared memory, as an operator copies it."""
    return b"".join(path.read_bytes() for path in sorted(db_path.parent.glob(db_path.name + "*")))


# -- an approval is bound to its tool -------------------------------------------------


def backup_registry(ran: list[str]) -> AgentRegistry:
    @tool(needs_approval=True)
    async def backup_db(db: str) -> str:
        """Back a database up."""
        ran.append(f"backup {db}")
        return "backed up"

    @tool(needs_approval=True)
    async def drop_db(db: str) -> str:
        """Drop a database."""
        ran.append(f"drop {db}")
        return "dropped"

    script: list[Any] = [[("backup_db", {"db": "main"})], "done"]
    model = ScriptedModel(script)
    return AgentRegistry(
        [Agent(name="ops", instructions="-", tools=[backup_db, drop_db], model=model)]
    )


async def reseal_with_tool(harness: Harness, run_id: str, tool_name: str) -> None:
    """What only someone holding the key ring could do: decrypt the stored state, swap
    the tool of the pending call (same call id, same arguments), seal it again."""
    data = (await own_state(harness.service, run_id)).to_dict()
    data["history"][-1]["tool_calls"][0]["name"] = tool_name
    data["pending_calls"][0]["tool_name"] = tool_name
    run = await harness.store.get_run(run_id)
    assert run is not None
    await harness.store.save_run_state(
        run_id,
        expected_version=run.version,
        state_json=json.dumps(data),
        status="paused",
        schema_version=CURRENT_SCHEMA_VERSION,
    )


async def test_the_approval_of_backup_db_never_runs_drop_db(
    open_harness: Callable[..., Any],
) -> None:
    ran: list[str] = []
    harness = await open_harness(registry=backup_registry(ran))
    run = await start(harness, "back up main")
    [approval] = await harness.pending(run.run_id)
    assert approval.tool_name == "backup_db"
    await reseal_with_tool(harness, run.run_id, "drop_db")

    await harness.service.decide(approval.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()

    assert ran == []
    [mismatch] = await audit_of(harness, run.run_id, "digest_mismatch")
    assert (mismatch["tool"], mismatch["approved_tool"]) == ("drop_db", "backup_db")
    voided = await harness.store.get_approval(approval.approval_id)
    assert voided is not None
    assert voided.status == "revoked"
    [again] = await harness.pending(run.run_id)  # asked again, for what would really run
    assert again.tool_name == "drop_db"
    assert again.arguments_digest != approval.arguments_digest
    assert await audit_of(harness, run.run_id, "executed") == []


async def test_the_journal_compares_the_tool_name_before_the_claim(
    open_harness: Callable[..., Any],
) -> None:
    """Defence in depth: even with a matching digest, a call of another tool than the
    approved one is refused before the ledger is touched, and audited."""
    ran: list[str] = []
    harness = await open_harness(registry=backup_registry(ran))
    run = await start(harness, "back up main")
    [approval] = await harness.pending(run.run_id)
    outcome = await harness.store.vote(
        approval.approval_id,
        decision="approved",
        voter=APPROVER,
        digest=approval.arguments_digest,
        reason="ok",
    )
    assert outcome.record.status == "approved"
    inner = InMemoryJournal()
    journal = ServiceJournal(
        inner,
        store=harness.store,
        run_id=run.run_id,
        actor="worker",
        approvals={approval.execution_key: outcome.record},
    )
    claim = {
        "execution_key": approval.execution_key,
        "arguments_digest": approval.arguments_digest,
        "run_id": run.run_id,
        "tool_call_id": approval.tool_call_id,
    }
    refused = await journal.claim(**claim, tool_name="drop_db")
    assert isinstance(refused, Recorded)
    assert refused.is_error
    assert "backup_db" in refused.result
    [mismatch] = await audit_of(harness, run.run_id, "digest_mismatch")
    assert (mismatch["tool"], mismatch["approved_tool"]) == ("drop_db", "backup_db")
    assert isinstance(await inner.claim(**claim, tool_name="drop_db"), Fresh)  # untouched


# -- a hidden value stays hidden ------------------------------------------------------


async def test_approve_with_changes_keeps_a_hidden_value_hidden(
    open_harness: Callable[..., Any],
) -> None:
    two = policy("[tools.set_config]\nrequired_approvals = 2\napprovers = ['UALICE', 'UBOB']")
    harness = await open_harness(policy=two)
    run = await start(harness, "set payments db_password=hunter2")
    [approval] = await harness.pending(run.run_id)
    assert json.loads(approval.snapshot)["arguments"]["value"] == REDACTED

    result = await harness.service.approve_with_changes(
        approval.approval_id,
        decider="UALICE",
        reason="it is the host, not the password",
        arguments={"service": "payments", "key": "db_host", "value": REDACTED},
    )
    stored = await harness.store.get_approval(approval.approval_id)
    assert stored is not None
    [updated] = harness.notifier.updated
    for snapshot in (result.approval.snapshot, stored.snapshot, updated.approval.snapshot):
        assert "hunter2" not in snapshot
        assert json.loads(snapshot)["arguments"] == {
            "service": "payments",
            "key": "db_host",
            "value": REDACTED,
        }
    state = await own_state(harness.service, run.run_id)
    assert state.pending_calls()[0].arguments["value"] == "hunter2"  # what will run


# -- a context never stores a secret by name -----------------------------------------


async def test_a_context_naming_a_secret_is_refused_before_anything_is_stored(
    harness: Harness, db_path: Path
) -> None:
    with pytest.raises(ContextSerializationError, match=r"context\.api_token"):
        await harness.service.start_run(
            agent_name=None,
            task="deploy payments 1.2.3",
            requester=REQUESTER,
            channel="C-ops",
            context={"ticket": "OPS-1", "api_token": "demo-secret-123"},
        )
    assert await harness.store.list_approvals() == []
    assert harness.notifier.events == []
    assert b"demo-secret-123" not in _database_bytes(db_path)


# -- expiry is checked when the call runs ---------------------------------------------


async def test_an_approval_past_its_expiry_never_executes(
    open_harness: Callable[..., Any],
) -> None:
    """The deploy is approved in time, but the run resumes only when the restart is
    decided, after the deploy's approval expired: the deploy does not run."""
    clock = Clock()
    rules = policy(
        "[tools.deploy_release]\nexpires_after = '1h'\n"
        "[tools.restart_service]\nexpires_after = '1d'\n"
    )
    harness = await open_harness(policy=rules, clock=clock)
    run = await start(harness, "deploy payments 1.2.3 and restart api")
    deploy, restart = await harness.pending(run.run_id)
    assert (deploy.tool_name, restart.tool_name) == ("deploy_release", "restart_service")
    clock.advance(minutes=10)
    await harness.service.decide(deploy.approval_id, approve=True, decider=APPROVER, reason="ok")
    clock.advance(hours=2)
    await harness.service.decide(restart.approval_id, approve=True, decider=APPROVER, reason="ok")
    await harness.service.drain()

    assert [line["tool"] for line in harness.effect_lines()] == ["restart_service"]
    [refused] = await audit_of(harness, run.run_id, "execution_refused")
    assert refused["tool"] == "deploy_release"
    assert refused["why"].startswith("its approval expired at ")
    [(told_about, why)] = harness.notifier.refused
    assert told_about.approval_id == deploy.approval_id
    assert "Not run: its approval expired" in harness.notifier.answer(run.run_id)
    assert why == refused["why"]
    assert REQUESTER  # the requester is told through the thread (ExecutionRefused)
