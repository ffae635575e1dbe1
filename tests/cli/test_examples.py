"""Every command written in examples/ works as written: each is read out of the file
(comments and docstrings), run by a shell from the checkout's root, and must succeed.
Only where the database and the effects go is set around it (a temporary directory),
and `serve` gets a fake Slack to talk to."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import build_parser
from tests.slack.fake_slack import FakeSlack
from tests.slack.slack_harness import fake_slack

__all__ = ["fake_slack"]  # the fixture


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    return {
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }


ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LABEL = re.compile(r"^[A-Z][a-z]+(?: [a-z]+)*:\s+")  # "Check it:", "Use it:" before a command
ASSIGNMENTS = r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)"
NAMES = "|".join(sorted(_subcommands(build_parser())))
COMMAND = re.compile(ASSIGNMENTS + rf"*approvals-bot (?:{NAMES})\b")
CONTINUED_ASSIGNMENTS = re.compile(ASSIGNMENTS + r"+\\$")
ANSWERS = "a\nchecked against the order\n"  # a person approving at the demo's prompt
SECONDS = 60.0


def commands_in(path: Path) -> list[str]:
    """The shell commands written in `path`: lines (a comment's `#` aside) that start
    with `approvals-bot` or variable assignments before it, joined over trailing `\\`."""
    found: list[str] = []
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for raw in lines:
        line = LABEL.sub("", raw.strip().lstrip("#").strip())
        if not (COMMAND.match(line) or CONTINUED_ASSIGNMENTS.match(line)):
            continue
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines).strip().lstrip("#").strip()
        if COMMAND.match(line):
            found.append(" ".join(line.split()))
    return found


def example_commands() -> list[str]:
    return [
        command
        for path in sorted(EXAMPLES.iterdir())
        if path.suffix in (".py", ".toml")
        for command in commands_in(path)
    ]


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("APPROVALS_", "OPS_", "SLACK_", "OPENAI_", "PYTHONPATH"))
    }
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        APPROVALS_DATABASE_URL=str(home / "approvals.db"),
        APPROVALS_DEMO_EFFECTS=str(home / "effects.jsonl"),
        APPROVALS_ENV_FILE=os.devnull,  # not a developer's .env in the checkout
        **extra,
    )
    return env


def test_the_examples_hold_the_commands_they_document() -> None:
    commands = example_commands()
    assert any("policy check examples/policy.toml" in command for command in commands)
    assert any(command.endswith("approvals-bot serve") for command in commands)
    assert sum("demo --agent billing" in command for command in commands) >= 2, commands


def test_the_extraction_joins_continued_lines(tmp_path: Path) -> None:
    text = '# Use it: A=1 B=2 \\\n#     approvals-bot demo "x"\n# approvals-bot is a bot\n'
    (tmp_path / "x.toml").write_text(text)
    assert commands_in(tmp_path / "x.toml") == ['A=1 B=2 approvals-bot demo "x"']


@pytest.mark.parametrize(
    "command", [c for c in example_commands() if not c.endswith(" serve")], ids=str
)
def test_each_example_command_works_as_written(command: str, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=environment(tmp_path),
        input=ANSWERS,
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    if "demo" in command:
        assert "refunded 2500 cents on order 1042" in done.stdout


@pytest.mark.parametrize(
    "command", [c for c in example_commands() if c.endswith(" serve")], ids=str
)
async def test_each_example_serve_command_serves(
    command: str, tmp_path: Path, fake_slack: FakeSlack
) -> None:
    mcp_missing = importlib.util.find_spec("mcp") is None
    if "APPROVALS_MCP=" in command and mcp_missing and not os.environ.get("CI"):
        pytest.skip("the MCP example needs the mcp extra: pip install -e '.[mcp]'")  # CI has it
    env = environment(
        tmp_path,
        SLACK_BOT_TOKEN="xoxb-example",
        SLACK_SIGNING_SECRET="example-secret",
        SLACK_API_URL=fake_slack.api_url,
        PORT="0",
    )
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command.replace("approvals-bot", "exec approvals-bot", 1),  # SIGTERM reaches it
        cwd=ROOT,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    wanted = ["serving Slack at"]
    if "APPROVALS_MCP=" in command:
        wanted.append("MCP gateway at")  # its upstream connected (or reported down)
    lines: list[str] = []
    async with asyncio.timeout(SECONDS):
        while not all(any(started in line for line in lines) for started in wanted):
            line = (await process.stderr.readline()).decode()
            assert line, f"{command}\n" + "\n".join(lines)
            lines.append(line.rstrip("\n"))
        process.send_signal(signal.SIGTERM)
        await process.communicate()
    assert process.returncode == 0, lines
    if "APPROVALS_POLICY=examples/policy.toml" in command:
        started = r"policy examples/policy\.toml, agents billing, ops\b"
        assert any(re.search(started, line) for line in lines), lines
    if "APPROVALS_MCP=" in command:
        assert any("upstreams: ops up" in line for line in lines), lines
