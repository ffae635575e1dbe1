"""Kill -9 at every step of a decision, across two replicas on Postgres, with Slack
redelivering the request: every decision kept, each approved call applied once
(idempotent) or left `uncertain` for a person (manual), none run unapproved.

    python bench/fault_campaign.py [--runs 216] [--quick] [--lease-seconds 2]

Two real `approvals-bot serve` processes (the demo ops agent, offline model) share a
fresh Postgres database (APPROVALS_TEST_PG_URL names a database on the server to create
it from; default the local server's `postgres`), the fake Slack Web API of the tests and
one demo downstream (the effects file). For each run, one replica is asked (`/agent
deploy ...`, an idempotent tool, or `/agent restart ...`, a manual one) and the other
takes the decision (the Approve click and the modal's submission) and is SIGKILLed at
one STEP of it:

    modal_open        Slack call: views.open for the click (before any vote)
    vote_committed    the approval is approved in the database (the vote's commit)
    card_update       Slack call: chat.update of the decided card
    resume_claimed    the run is `resuming` (the resume's claim is committed)
    dispatch_claimed  the call's ledger row is `executing` (the dispatch intent)
    effect_applied    the downstream applied the effect; its result is not recorded
    result_recorded   the ledger holds the call's result
    answer_post       Slack call: chat.postMessage of the run's answer
    run_settled       the run completed (or paused on an uncertain call)

A Slack call is killed exactly: the fake holds the call and kills its caller before
answering. A database step is observed from outside (polled every 2 ms), so the kill
lands shortly after that commit. Then the modal's submission is delivered again 0-3
times (the same payload, signed anew, `X-Slack-Retry-Num` set) to the replica still alive,
and when the decision was never acknowledged, the approver submits once more (a new
request): a person whose modal did not close. The killed replica restarts meanwhile.
Each round takes every STEP with each tool once, the number of redeliveries turning
from round to round, so 72 runs take every combination and 216 take each three times.

Each run's outcome is counted, and any of these fails the campaign (exit 1): an
acknowledged decision missing from the database; an effect without an approved call
whose sealed quorum is on the digest that ran (bot.service.sealed); an execution key
applied twice (a repeat the idempotent downstream recognised is not an effect); a run
neither completed nor paused on an uncertain call within the deadline; the audit chain
not verifying at the end. A run `failed` by a fenced replica is counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.errors import StoreError  # noqa: E402
from bot.service.sealed import sealed_quorum  # noqa: E402
from bot.slack.probes import READY_PATH  # noqa: E402
from bot.slack.server import EVENTS_PATH  # noqa: E402
from bot.slack.signature import compute_signature  # noqa: E402
from store import open_store  # noqa: E402
from store.api import Store  # noqa: E402
from store.crypto import KeyRing  # noqa: E402
from store.keys import format_key, generate_key  # noqa: E402
from tests.slack.fake_slack import Call, FakeSlack  # noqa: E402
from tests.slack.serve_process import (  # noqa: E402
    SERVE_CHANNEL,
    SERVE_SECRET,
    Served,
    serve_env,
    start_serve,
)
from tests.slack.slack_driver import SlackDriver  # noqa: E402
from tests.store.postgres_db import admin_url, fresh_postgres_database  # noqa: E402

STEPS = (
    "modal_open",
    "vote_committed",
    "card_update",
    "resume_claimed",
    "dispatch_claimed",
    "effect_applied",
    "result_recorded",
    "answer_post",
    "run_settled",
)
SLACK_STEPS = {"modal_open": "views.open", "card_update": "chat.update",
               "answer_post": "chat.postMessage"}  # fmt: skip
TOOLS = ("deploy", "restart")
REDELIVERIES = (0, 1, 2, 3)
QUICK = (
    ("vote_committed", "deploy", 1),
    ("effect_applied", "deploy", 2),
    ("card_update", "restart", 0),
    ("effect_applied", "restart", 3),
    ("answer_post", "deploy", 1),
    ("modal_open", "restart", 2),
)
REQUESTER, APPROVER = "U0REQ", "U0APP"
POLL_SECONDS = 0.002
SETTLE_SECONDS = 60.0
TOOL_SECONDS = 0.3  # each demo tool waits this long after its effect: the crash window
REQUEST_SECONDS = 30.0  # an answer later than this counts as none (Slack waits 3 s)
DB_DOWN_SECONDS = 3.0  # how long the `db` fault keeps the database refusing connections
BAD = ("decision lost", "applied twice", "ran unapproved", "stuck")
"""Outcomes that fail the campaign (a run `failed` is counted apart: see the doc)."""


@dataclass(kw_only=True)
class Replica:
    name: str
    env: dict[str, str]
    token: str
    served: Served | None = None
    restarting: asyncio.Task[None] | None = None
    killed: bool = False  # SIGKILL sent (its exit is noticed a little later)
    frozen: bool = False  # SIGSTOPped

    @property
    def alive(self) -> bool:
        """Running and answering (neither killed nor frozen)."""
        running = self.served is not None and self.served.process.returncode is None
        return running and not self.killed and not self.frozen

    @property
    def ready_url(self) -> str:
        assert self.served is not None
        return self.served.url.replace(EVENTS_PATH, READY_PATH)

    def signal(self, number: signal.Signals) -> None:
        assert self.served is not None
        self.served.process.send_signal(number)

    def kill(self) -> None:
        if self.alive:
            self.signal(signal.SIGKILL)
            self.killed = True

    async def start(self) -> None:
        self.served = await start_serve(self.env)
        self.killed = False

    async def ready(self) -> None:
        if self.restarting is not None:
            await self.restarting
            self.restarting = None
        if not self.alive:
            await self.start()

    def restart_soon(self) -> None:
        async def restart() -> None:
            assert self.served is not None
            await self.served.process.wait()
            await self.start()

        self.restarting = asyncio.get_running_loop().create_task(restart())


@dataclass(kw_only=True)
class Campaign:
    fake: FakeSlack
    store: Store
    session: aiohttp.ClientSession
    replicas: tuple[Replica, Replica]
    effects: Path
    outcomes: Counter[str] = field(default_factory=Counter)
    by_step: dict[str, Counter[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    armed: tuple[str, Replica, Callable[[str, Mapping[str, Any]], bool]] | None = None
    fault: str = "kill"
    lease_seconds: float = 2.0
    database: str = ""  # its name, for the `db` fault
    struck: bool = False  # the fault hit this run
    recovering: asyncio.Task[None] | None = None  # the frozen replica thawing, the db back
    readiness: Counter[str] = field(default_factory=Counter)
    back_after: list[float] = field(default_factory=list)

    async def strike(self, target: Replica) -> None:
        """The campaign's fault, on `target` at the armed step (once per run)."""
        if self.struck or not target.alive:
            return
        self.struck = True
        if self.fault == "kill":
            target.kill()
        elif self.fault == "stop":
            target.signal(signal.SIGSTOP)
            target.frozen = True
            self.recovering = asyncio.get_running_loop().create_task(self.thaw(target))
        else:  # `recovering` is set before the first await: a run that sees `struck`
            # waits for the database to come back, never starts the next run while it
            # is still cut (the step's caller is held until the cut is made)
            cut = asyncio.get_running_loop().create_task(cut_database(self.database))
            self.recovering = asyncio.get_running_loop().create_task(self.restore(target, cut))
            await asyncio.shield(cut)

    async def recovered(self) -> None:
        """Wait for the fault to be over (the replica thawed, the database back)."""
        if self.recovering is not None:
            await self.recovering
            self.recovering = None

    async def thaw(self, target: Replica) -> None:
        """SIGCONT once the lease it held has run out and the other replica looked."""
        await asyncio.sleep(self.lease_seconds * 2 + 1)
        target.signal(signal.SIGCONT)
        target.frozen = False

    async def restore(self, target: Replica, cut: asyncio.Task[None]) -> None:
        """Once `cut` is made: while the database refuses connections, `target` must say
        it is not ready; then the database is back and it must be ready again."""
        await cut
        said = await self.ready_becomes(target, False, DB_DOWN_SECONDS)
        self.readiness["not ready while the database was down" if said else
                       "READY while the database was down"] += 1  # fmt: skip
        await asyncio.sleep(max(DB_DOWN_SECONDS - said, 0) if said else 0)
        await restore_database(self.database)
        again = await self.ready_becomes(target, True, SETTLE_SECONDS)
        if again:
            self.readiness["ready again after the database came back"] += 1
            self.back_after.append(again)
        else:
            self.readiness["NOT ready again after the database came back"] += 1

    async def ready_becomes(self, target: Replica, ready: bool, within: float) -> float:
        """Seconds until `target`'s /readyz says `ready` (0.0: not within `within`)."""
        started = time.monotonic()
        while time.monotonic() - started < within:
            try:
                async with self.session.get(target.ready_url) as answer:
                    if (answer.status == 200) == ready:
                        return max(time.monotonic() - started, 1e-3)
            except (aiohttp.ClientError, OSError):
                pass
            await asyncio.sleep(0.05)  # a poll step, under the deadline
        return 0.0

    def driver(self, replica: Replica) -> SlackDriver:
        assert replica.served is not None
        return replica.served.driver(self.session, self.fake)

    async def before_answer(self, method: str, args: Mapping[str, Any], token: str | None) -> None:
        """The fake Slack's hook: kill the armed replica when it makes the armed call."""
        if self.armed is None:
            return
        step, target, matches = self.armed
        if token == target.token and SLACK_STEPS.get(step) == method and matches(method, args):
            self.armed = None
            await self.strike(target)

    def effect_lines(self) -> list[dict[str, Any]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line]


async def admin(*statements: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(admin_url(), timeout=10)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


async def cut_database(name: str) -> None:
    """Every connection to the database dropped (its backends terminated, as a failover
    or a network cut does) and new ones refused until `restore_database`: only this
    campaign's own database, never the shared server."""
    await admin(
        f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false',
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid()",
    )


async def restore_database(name: str) -> None:
    await admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def cards(fake: FakeSlack) -> list[Call]:
    """The review cards posted (an uncertain call's card, which has no Approve, is not)."""
    return [
        call
        for call in fake.calls_to("chat.postMessage")
        if call.ok and "Approve" in json.dumps(call.args.get("blocks") or [])
    ]


async def until(check: Callable[[], Awaitable[Any]], what: str, seconds: float) -> Any:
    """`check()` until it answers (a database that does not answer now is asked again)."""
    async with asyncio.timeout(seconds):
        while True:
            try:
                found = await check()
            except StoreError:
                found = None  # the `db` fault: the campaign's own connections drop too
            if found is not None:
                return found
            await asyncio.sleep(POLL_SECONDS)  # a poll step, under the deadline


def signed(
    driver: SlackDriver, payload: Mapping[str, Any], *, later: int = 0
) -> tuple[str, str, str]:
    """One request as Slack signs it, `later` seconds on (a redelivery comes seconds after
    the first: its signature differs): (body, timestamp, signature)."""
    body = urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()) + later)
    return body, stamp, compute_signature(signing_secret=SERVE_SECRET, timestamp=stamp,
                                          body=body.encode())  # fmt: skip


async def deliver(
    driver: SlackDriver, request: tuple[str, str, str], *, retry: int = 0
) -> int | None:
    """The HTTP status of one delivery (None: the connection died with the replica;
    negative: answered with a body, such as the modal's errors, so it did not close)."""
    body, stamp, signature = request
    headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    try:
        reply = await driver.post(
            body, content_type="application/x-www-form-urlencoded", timestamp=stamp,
            signature=signature, headers=headers if retry else None,
        )  # fmt: skip
    except (aiohttp.ClientError, OSError, TimeoutError):
        return None
    return reply.status if reply.text == "" else -reply.status  # a body: the modal stays


async def one_run(campaign: Campaign, number: int, step: str, tool: str, redeliveries: int) -> str:
    asker, decider = campaign.replicas if number % 2 else reversed(campaign.replicas)
    for replica in (asker, decider):  # as a load balancer does: only to ready replicas
        await replica.ready()
        if not await campaign.ready_becomes(replica, True, SETTLE_SECONDS):
            raise RuntimeError(f"a replica not ready {SETTLE_SECONDS} s before run {number}")
    fake = campaign.fake
    task = f"deploy payments 1.0.{number}" if tool == "deploy" else f"restart svc{number}"
    before = len(cards(fake))
    await campaign.driver(asker).command("/agent", task, user=REQUESTER, channel=SERVE_CHANNEL)
    card = (await fake.wait_for("chat.postMessage", lambda c: c in cards(fake),
                                count=before + 1, within=SETTLE_SECONDS))[-1]  # fmt: skip
    run = await campaign.store.find_run_by_thread(SERVE_CHANNEL, card.args["thread_ts"])
    assert run is not None, card
    assert run.task == task, (run.task, task)
    thread = card.args.get("thread_ts")

    def answer_of_run(method: str, args: Mapping[str, Any]) -> bool:
        if method == "chat.update":
            return bool(args.get("ts") == card.answer["ts"])
        if method == "chat.postMessage":
            blocks = args.get("blocks") or []
            buttons = any(isinstance(b, dict) and b.get("type") == "actions" for b in blocks)
            return args.get("thread_ts") == thread and not buttons
        return True

    campaign.armed = (step, decider, answer_of_run)
    await campaign.recovered()  # the last run's fault is over before this one's is armed
    campaign.struck = False
    watcher = asyncio.get_running_loop().create_task(watch(campaign, step, decider, run.run_id))
    acknowledged = await decide(campaign, decider, card)
    with contextlib.suppress(TimeoutError):  # the step never came: counted below
        await until(lambda: _true(campaign.struck or watcher.done()), "the step", SETTLE_SECONDS)
    struck = campaign.struck
    if not struck or step in SLACK_STEPS:
        watcher.cancel()  # else it is striking: let it finish (a cut half made is no cut)
    await asyncio.gather(watcher, return_exceptions=True)
    campaign.armed = None
    if decider.killed:
        decider.restart_soon()
    live = asker if asker.alive else decider
    await live.ready()
    if acknowledged.payload is not None:  # Slack signs each delivery anew
        driver = campaign.driver(live)
        for retry in range(1, redeliveries + 1):
            redelivery = signed(driver, acknowledged.payload, later=retry)
            acknowledged.statuses.append(await deliver(driver, redelivery, retry=retry))
    await campaign.recovered()
    if not await until(lambda: voted(campaign.store, run.run_id), "votes", SETTLE_SECONDS):
        if 200 in acknowledged.statuses:
            acknowledged.lost = True  # the modal closed, yet no vote is kept
        again = await decide(campaign, live, card)  # the person decides again
        acknowledged.statuses.extend(again.statuses)
    outcome = await settle(campaign, run.run_id, tool, acknowledged)
    if not struck:
        outcome += " [step not reached]"
    campaign.outcomes[outcome] += 1
    campaign.by_step.setdefault(step, Counter())[outcome] += 1
    if outcome.partition(" [")[0] in BAD:
        campaign.problems.append(
            f"run {number} ({step}, {tool}, x{redeliveries}): {outcome}; the submission's "
            f"deliveries were answered {acknowledged.statuses} (None: no answer, negative: "
            "with a body, the modal stays open)"
        )
    return outcome


async def _true(value: bool) -> bool | None:
    return True if value else None


@dataclass(kw_only=True)
class Decision:
    payload: Mapping[str, Any] | None = None  # the modal's submission
    statuses: list[int | None] = field(default_factory=list)
    lost: bool = False  # acknowledged (HTTP 200: the modal closed) and not in the database


async def decide(campaign: Campaign, replica: Replica, card: Call) -> Decision:
    """Approve -> modal -> submit, through `replica` (it may die on the way)."""
    decision = Decision()
    if not replica.alive:
        return decision
    driver = campaign.driver(replica)
    modals = len(campaign.fake.calls_to("views.open"))
    await deliver(driver, signed(driver, driver.click_payload(
        card, "Approve", user=APPROVER, ts=card.answer["ts"])))  # fmt: skip
    try:
        opened = (await campaign.fake.wait_for("views.open", count=modals + 1, within=10))[-1]
    except (AssertionError, TimeoutError):
        return decision  # killed before the modal opened
    if not opened.ok or not replica.alive:
        return decision
    payload = driver.submission_payload(opened.args["view"], user=APPROVER, reason="campaign")
    decision.payload = payload
    decision.statuses.append(await deliver(driver, signed(driver, payload)))
    return decision


async def voted(store: Store, run_id: str) -> bool:
    approvals = await store.list_approvals(run_id=run_id, limit=10)
    votes = await store.votes([a.approval_id for a in approvals])
    return any(vote.voter == APPROVER for found in votes.values() for vote in found)


async def watch(campaign: Campaign, step: str, target: Replica, run_id: str) -> None:
    """Kill `target` once the database (or the downstream) shows `step` for the run."""
    if step in SLACK_STEPS:
        await asyncio.Event().wait()  # the fake Slack's hook kills it
    check = {
        "vote_committed": lambda: _status_is(campaign.store, run_id, "approved"),
        "resume_claimed": lambda: _run_is(campaign.store, run_id, "resuming"),
        "dispatch_claimed": lambda: _ledger_is(campaign.store, run_id, ("executing",)),
        "effect_applied": lambda: _effect_of(campaign, run_id),
        "result_recorded": lambda: _ledger_is(campaign.store, run_id, ("succeeded",)),
        "run_settled": lambda: _run_is(campaign.store, run_id, "completed"),
    }[step]
    await until(check, step, SETTLE_SECONDS)
    await campaign.strike(target)


async def _status_is(store: Store, run_id: str, status: str) -> bool | None:
    approvals = await store.list_approvals(run_id=run_id, limit=10)
    return True if any(a.status == status for a in approvals) else None


async def _run_is(store: Store, run_id: str, status: str) -> bool | None:
    run = await store.get_run(run_id)
    return True if run is not None and run.status == status else None


async def _ledger_is(store: Store, run_id: str, states: tuple[str, ...]) -> bool | None:
    entries = await store.ledger_entries(run_id=run_id)
    return True if any(entry.state in states for entry in entries) else None


async def _effect_of(campaign: Campaign, run_id: str) -> bool | None:
    keys = {entry.execution_key for entry in await campaign.store.ledger_entries(run_id=run_id)}
    return True if any(line["execution_key"] in keys for line in campaign.effect_lines()) else None


async def settle(campaign: Campaign, run_id: str, tool: str, decision: Decision) -> str:
    store = campaign.store

    async def settled() -> str | None:
        run = await store.get_run(run_id)
        if run is None:
            return None
        entries = await store.ledger_entries(run_id=run_id)
        if run.status in ("completed", "failed", "cancelled"):
            return run.status
        if run.status == "paused" and any(entry.state == "uncertain" for entry in entries):
            return "uncertain"
        return None

    try:
        status = await until(settled, "the run never settled", SETTLE_SECONDS)
    except TimeoutError:
        return "stuck"
    if decision.lost:
        return "decision lost"
    for _ in range(3):  # a fault that struck late (at the answer) may still be on
        await campaign.recovered()
        try:
            return await classify(campaign, run_id, tool, str(status))
        except StoreError:
            await asyncio.sleep(1.0)  # the database is back within the fault's seconds
    return await classify(campaign, run_id, tool, str(status))


async def classify(campaign: Campaign, run_id: str, tool: str, status: str) -> str:
    """What happened to a settled run, from the ledger, the effects and the audit."""
    store = campaign.store
    keys = {entry.execution_key for entry in await store.ledger_entries(run_id=run_id)}
    lines = [line for line in campaign.effect_lines() if line["execution_key"] in keys]
    applied = Counter(line["execution_key"] for line in lines if not line["duplicate"])
    if any(count > 1 for count in applied.values()):
        return "applied twice"
    if not await sealed_for_every_effect(store, run_id, applied):
        return "ran unapproved"
    repeats = sum(1 for line in lines if line["duplicate"])
    if status == "completed":
        return "applied once" + (" (a repeat recognised)" if repeats else "")
    if status == "uncertain":
        return f"uncertain ({'applied' if applied else 'not applied'}, for a person)"
    trail = await store.audit_events(run_id=run_id)
    failed = [event for event in trail if event.kind == "failed"]
    why = str(failed[-1].detail.get("error", ""))[:80] if failed else ""
    if "LeaseLost" in why:
        return f"{status} by a replica whose lease was taken over ({tool}, {len(applied)} applied)"
    return f"{status} ({tool}, {len(applied)} applied: {why})"


async def sealed_for_every_effect(store: Store, run_id: str, applied: Counter[str]) -> bool:
    approvals = await store.list_approvals(run_id=run_id, limit=10)
    for key in applied:
        deciding = [a for a in approvals if a.execution_key == key and a.status == "approved"]
        if len(deciding) != 1:
            return False
        evidence = await store.decision_evidence(deciding[0].approval_id)
        if evidence is None or sealed_quorum(evidence).problem is not None:
            return False
    return True


def plan(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    if args.quick:
        return list(QUICK)
    combos = (
        (step, tool, REDELIVERIES[(s + t + r) % len(REDELIVERIES)])
        for r in itertools.count()
        for s, step in enumerate(STEPS)
        for t, tool in enumerate(TOOLS)
    )  # every step and tool once per round, the redeliveries turning
    return list(itertools.islice(combos, args.runs))


async def run_campaign(args: argparse.Namespace, url: str, workdir: Path) -> Campaign:
    fake = FakeSlack()
    await fake.start()
    key = generate_key("k1")
    store = await open_store(url, keyring=KeyRing([key]), environ={})
    replicas = []
    for name in ("a", "b"):
        token = f"xoxb-campaign-{name}"
        env = serve_env(
            fake, workdir,
            SLACK_BOT_TOKEN=token,
            APPROVALS_DATABASE_URL=url,
            APPROVALS_WORKER_ID=f"replica-{name}",
            APPROVALS_LEASE_SECONDS=str(args.lease_seconds),
            APPROVALS_SWEEP_SECONDS=str(args.sweep_seconds),
            OPS_DEMO_LATENCY=str(TOOL_SECONDS),
            LOG_LEVEL="WARNING",
        )  # fmt: skip
        env["APPROVALS_KEYS"] = format_key(key)
        replicas.append(Replica(name=name, env=env, token=token))
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_SECONDS))
    campaign = Campaign(
        fake=fake, store=store, session=session, replicas=(replicas[0], replicas[1]),
        effects=workdir / "effects.jsonl", fault=args.fault, lease_seconds=args.lease_seconds,
        database=url.partition("?")[0].rpartition("/")[2],
    )  # fmt: skip
    fake.before_answer = campaign.before_answer
    try:
        await asyncio.gather(*(replica.start() for replica in replicas))
        for number, (step, tool, redeliveries) in enumerate(plan(args), start=1):
            started = time.monotonic()
            outcome = await one_run(campaign, number, step, tool, redeliveries)
            if args.verbose:
                print(f"  {number:4d} {step:17s} {tool:8s} x{redeliveries}: {outcome} "
                      f"({time.monotonic() - started:.1f} s)", flush=True)  # fmt: skip
        verification = await store.verify_audit()
        if not verification.ok:
            campaign.problems.append(f"the audit chain does not verify: {verification}")
    finally:
        fake.before_answer = None
        for replica in replicas:
            if replica.restarting is not None:
                await asyncio.gather(replica.restarting, return_exceptions=True)
            if replica.alive:
                assert replica.served is not None
                replica.served.process.send_signal(signal.SIGTERM)
                await replica.served.process.wait()
        await session.close()
        await store.close()
        await fake.close()
    return campaign


def report(campaign: Campaign, runs: int, seconds: float) -> None:
    print(f"{runs} runs ({campaign.fault}) in {seconds:.0f} s; outcomes:")
    for outcome, count in campaign.outcomes.most_common():
        print(f"  {count:4d}  {outcome}")
    print("by step:")
    for step in STEPS:
        if step in campaign.by_step:
            counts = ", ".join(f"{o}: {n}" for o, n in campaign.by_step[step].most_common())
            print(f"  {step:17s} {counts}")
    for seen, count in campaign.readiness.most_common():
        print(f"  readiness: {seen}: {count}")
        if seen.isupper() or seen.split()[0].isupper():
            campaign.problems.append(f"readiness: {seen} ({count} runs)")
    if campaign.back_after:
        back = sorted(campaign.back_after)
        print(f"  ready again after the database came back: median {back[len(back) // 2]:.2f} s, "
              f"max {back[-1]:.2f} s")  # fmt: skip
    for problem in campaign.problems:
        print(f"PROBLEM {problem}")
    print("PASS" if not campaign.problems else "FAIL")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=len(STEPS) * len(TOOLS) * 4 * 3)
    parser.add_argument("--quick", action="store_true", help="six runs, for a CI test")
    parser.add_argument("--lease-seconds", type=float, default=2.0)
    parser.add_argument("--sweep-seconds", type=float, default=0.2)
    parser.add_argument("--verbose", action="store_true", help="one line per run")
    parser.add_argument(
        "--fault",
        choices=("kill", "stop", "db"),
        default="kill",
        help="kill: SIGKILL the deciding replica; stop: SIGSTOP it past its lease, then "
        "SIGCONT; db: drop every connection to the database and refuse new ones for 3 s",
    )
    args = parser.parse_args()
    started = time.monotonic()
    with fresh_postgres_database() as url, tempfile.TemporaryDirectory() as workdir:
        campaign = asyncio.run(run_campaign(args, url, Path(workdir)))
    report(campaign, sum(campaign.outcomes.values()), time.monotonic() - started)
    return 0 if not campaign.problems else 1


if __name__ == "__main__":
    sys.exit(main())
