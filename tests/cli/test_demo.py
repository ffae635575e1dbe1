"""`approvals-bot demo` as a user runs it: a subprocess with its own environment, a real
SQLite file, the ops agent and its offline model. Nothing is faked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

OPS_TOKEN = "xoxb-2718281828-demo-token-never-stored"
DIGEST = re.compile(r"digest:\s+([0-9a-f]{64})\b")


class Demo:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.effects = home / "effects.jsonl"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("APPROVALS_", "OPS_"))
        }
        self.env.update(
            APPROVALS_DATABASE_URL=str(home / "approvals.db"),
            APPROVALS_DEMO_EFFECTS=str(self.effects),
            OPS_API_TOKEN=OPS_TOKEN,
        )

    def run(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bot", "demo", *args],
            env=self.env,
            cwd=self.home,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def effect_lines(self) -> list[dict[str, object]]:
        if not self.effects.exists():
            return []
        return [json.loads(line) for line in self.effects.read_text().splitlines() if line]


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    return Demo(tmp_path)


def test_approve_runs_the_call_once_and_prints_the_answer(demo: Demo) -> None:
    done = demo.run(
        "deploy payments 1.2.3", "--approve", "--reason", "CR-42", "--approver", "alice"
    )

    assert done.returncode == 0, done.stderr
    [effect] = demo.effect_lines()
    assert effect["tool"] == "deploy_release"
    assert DIGEST.search(done.stdout), done.stdout
    assert "approved by alice" in done.stdout
    answer = done.stdout.split("answer:", 1)[1]
    assert "payments" in answer
    assert (demo.home / "approvals.db").exists()  # persisted through the store


def test_reject_runs_nothing_and_only_the_message_reaches_the_answer(demo: Demo) -> None:
    reason = "audit-only-reason-42f change freeze"
    message = "Not during the payments freeze, try Monday."
    done = demo.run("deploy payments 1.2.3", "--reject", "--message", message, "--reason", reason)

    assert done.returncode == 0, done.stderr
    assert demo.effect_lines() == []
    answer = done.stdout.split("answer:", 1)[1]
    assert message in answer
    assert reason not in done.stdout


def test_the_state_file_holds_the_paused_state_without_the_token(demo: Demo) -> None:
    state_file = demo.home / "paused.json"
    done = demo.run(
        "deploy payments 1.2.3 and set payments db_password=hunter2-very-secret",
        "--approve",
        "--state",
        str(state_file),
    )

    assert done.returncode == 0, done.stderr
    assert state_file.stat().st_mode & 0o777 == 0o600  # it holds the tool arguments
    state = json.loads(state_file.read_text())
    assert state["$schemaVersion"]
    assert [call["tool_name"] for call in state["pending_calls"]] == [
        "deploy_release",
        "set_config",
    ]
    assert OPS_TOKEN not in state_file.read_text()
    card = done.stdout.split("approval needed: set_config", 1)[1].split("\n\n", 1)[0]
    assert "hunter2-very-secret" not in card  # shown redacted, covered by the digest
    assert "hunter2-very-secret" not in done.stdout.split("\n", 1)[0]  # nor echoed
    assert len(demo.effect_lines()) == 2


def test_a_context_holding_a_secret_is_refused(demo: Demo) -> None:
    done = demo.run(
        "status payments", "--context-json", '{"tenant": "acme", "api_token": "' + OPS_TOKEN + '"}'
    )

    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("approvals-bot: error:")
    assert "context.api_token" in line
    assert OPS_TOKEN not in done.stderr + done.stdout


def test_a_plain_context_is_accepted(demo: Demo) -> None:
    done = demo.run("status payments", "--context-json", '{"tenant": "acme"}')
    assert done.returncode == 0, done.stderr
    assert "payments" in done.stdout.split("answer:", 1)[1]


def test_the_requester_cannot_approve(demo: Demo) -> None:
    done = demo.run("deploy payments 1.2.3", "--approve", "--approver", "demo-requester")
    assert done.returncode == 2
    assert "someone else" in done.stderr
    assert demo.effect_lines() == []


def test_the_prompt_asks_for_a_decision_and_a_reason(demo: Demo) -> None:
    done = demo.run("deploy payments 1.2.3", stdin="maybe\na\n\nchecked the diff\n")
    assert done.returncode == 0, done.stderr
    assert "a reason is required" in done.stdout
    assert len(demo.effect_lines()) == 1


def test_without_flags_or_input_it_says_how_to_decide(demo: Demo) -> None:
    done = demo.run("deploy payments 1.2.3")
    assert done.returncode == 2
    assert "--approve or --reject" in done.stderr
    assert demo.effect_lines() == []


def test_message_is_refused_with_approve(demo: Demo) -> None:
    done = demo.run("deploy payments 1.2.3", "--approve", "--message", "hi")
    assert done.returncode == 2
    assert "--message goes with --reject" in done.stderr
    assert not (demo.home / "approvals.db").exists()  # refused before anything was stored


def test_a_state_file_in_a_missing_directory_is_refused_before_anything_runs(demo: Demo) -> None:
    target = demo.home / "no-such-dir" / "paused.json"
    done = demo.run("deploy payments 1.2.3", "--approve", "--state", str(target))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("approvals-bot: error: --state")
    assert not (demo.home / "approvals.db").exists()
    assert demo.effect_lines() == []


def test_hiding_characters_are_escaped_and_look_alikes_flagged_in_the_terminal(
    demo: Demo,
) -> None:
    done = demo.run("deploy pay\u202emnets 1.2.3 and restart p\u0430yments", "--reject")
    assert done.returncode == 0, done.stderr
    card = done.stdout.split("answer:", 1)[0]  # the model's answer is its own text
    assert "\u202e" not in card
    assert '"pay\\u202emnets"' in card  # the card's arguments, as JSON escapes
    assert "pay\\u202emnets" in done.stdout.splitlines()[0]  # and the echoed task
    assert "warning:   $.service: p\\u0430yments mixes Cyrillic and Latin letters" in card


def test_a_task_past_the_limit_is_refused_by_its_length_before_it_is_read(demo: Demo) -> None:
    task = "deploy payments " + "9" * 5000
    done = demo.run(task, "--approve")
    assert done.returncode == 2
    assert done.stderr == (
        f"approvals-bot: error: the task is {len(task)} characters long; the limit is 4000 "
        "(limits.task_chars)\n"
    )
    assert not (demo.home / "approvals.db").exists()


def test_a_task_not_understood_is_quoted_short(demo: Demo) -> None:
    task = "please " + "do the thing " * 250  # 3,257 characters: under the limit
    done = demo.run(task, "--approve")
    assert done.returncode == 2
    assert done.stderr.startswith('approvals-bot: error: I did not understand "please do the')
    assert f"… ({len(task.strip())} characters)" in done.stderr
    assert len(done.stderr) < 400
