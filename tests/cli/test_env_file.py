"""The `.env` file: read from the working directory by every command, the environment
first (bot.env_file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.env_file import load_env_file, parse_env_file
from bot.errors import ConfigError
from tests.cli.operator_support import Home


def test_the_format() -> None:
    text = "\n".join(
        [
            "# a comment",
            "",
            "PLAIN=value   # a comment after it",
            "export EXPORTED=yes",
            "SPACED = around the sign ",
            "SINGLE='kept as # it is\\n'",
            'DOUBLE="line\\nnext \\"quoted\\"" # comment',
            "EMPTY=",
            "HASH=a#b",
        ]
    )
    assert parse_env_file(text, source=".env") == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "SPACED": "around the sign",
        "SINGLE": "kept as # it is\\n",
        "DOUBLE": 'line\nnext "quoted"',
        "EMPTY": "",
        "HASH": "a#b",
    }


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("SLACK_BOT_TOKEN xoxb-secret-value", "line 2: expected NAME=value"),
        ("1BAD=x", "line 2: expected NAME=value"),
        ("OPEN='xoxb-secret-value", "line 2: the value's ' quote is not closed"),
        ('AFTER="x" xoxb-secret-value', "line 2: unexpected text after the quoted value"),
    ],
)
def test_a_bad_line_names_its_number_never_its_text(line: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_env_file(f"# first\n{line}\n", source="/x/.env")
    assert str(raised.value) == f"env file /x/.env {problem}"
    assert "secret" not in str(raised.value)


def test_the_environment_wins_and_the_file_fills_in(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=from-file\nB=from-file\n", encoding="utf-8")
    environ = {"APPROVALS_ENV_FILE": str(path), "A": "from-environment"}
    assert load_env_file(environ) == path
    assert environ["A"] == "from-environment"
    assert environ["B"] == "from-file"


def test_a_named_file_must_exist_the_default_need_not(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"APPROVALS_ENV_FILE names .*nope, which does not"):
        load_env_file({"APPROVALS_ENV_FILE": str(tmp_path / "nope")})


def test_a_command_reads_the_dot_env_of_its_working_directory(home: Home) -> None:
    """`home` is the working directory and names no env file: ./.env is read."""
    elsewhere = home.path / "elsewhere"
    elsewhere.mkdir()
    (home.path / ".env").write_text(
        f"APPROVALS_DATABASE_URL={elsewhere / 'from-dotenv.db'}\n"
        "APPROVALS_DEMO_EFFECTS=ignored.jsonl\n",
        encoding="utf-8",
    )
    home.monkeypatch.delenv("APPROVALS_DATABASE_URL", raising=False)  # restored after
    code, _, err = home.cli("demo", "restart api", "--approve", "--reason", "r")
    assert code == 0, err
    assert (elsewhere / "from-dotenv.db").exists()  # the file filled it in
    assert len(home.effect_lines()) == 1  # the environment's effects file won
    assert not (home.path / "ignored.jsonl").exists()


def test_a_broken_dot_env_stops_any_command_in_one_line(home: Home) -> None:
    (home.path / ".env").write_text("not a setting\n", encoding="utf-8")
    code, _, err = home.cli("runs", "list")
    assert code == 2
    assert err == "approvals-bot: error: env file .env line 1: expected NAME=value\n"
