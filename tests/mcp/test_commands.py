"""`approvals-bot mcp check | token`, and `serve` with a gateway file that has problems
(one line, before anything opens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.mcp.config_file import parse_gateway_config
from bot.mcp.tokens import client_for

ROOT = Path(__file__).resolve().parents[2]


def test_check_prints_what_a_good_file_sets_up(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "check", str(ROOT / "examples" / "mcp.toml")]) == 0
    out = capsys.readouterr().out
    assert ": OK" in out
    assert "upstreams.ops: stdio `python3 examples/mcp_upstream.py`" in out
    assert "read-only pass straight through" in out
    assert "clients.laptop: cards to C0OPS, acting for U0REQ" in out


def test_check_names_every_problem_and_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mcp.toml"
    path.write_text('[upstreams.ops]\n[clients.a]\nchannel = "C0OPS"\n', encoding="utf-8")
    assert main(["mcp", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "3 problems" in err
    for key in ("upstreams.ops:", "clients.a:", "clients.a.user:"):
        assert key in err


def test_token_prints_a_token_and_only_the_digest_for_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["mcp", "token", "claude-code"]) == 0
    out = capsys.readouterr().out.splitlines()
    token = out[1].strip()
    table = "\n".join(out[3:]) + '\nchannel = "C0OPS"\nuser = "U0REQ"\n'
    config = parse_gateway_config(f'[upstreams.ops]\ncommand = "x"\n{table}')
    client = config.clients["claude-code"]
    assert client_for(token, [(client.token_digests, client.name)]) == "claude-code"
    assert token not in "\n".join(out[2:])
    assert main(["mcp", "token", "Bad Name"]) == 2


def test_serve_stops_at_once_on_a_bad_gateway_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mcp.toml"
    path.write_text(
        (ROOT / "examples" / "mcp.toml").read_text(encoding="utf-8")
        + '\n[upstreams.docs]\nurl = "https://example.com/mcp"\n'
        + 'headers = { Authorization = "DOCS_AUTH_NOT_SET" }\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    monkeypatch.setenv("APPROVALS_DATABASE_URL", str(tmp_path / "a.db"))
    monkeypatch.setenv("APPROVALS_MCP", str(path))
    monkeypatch.delenv("DOCS_AUTH_NOT_SET", raising=False)
    assert main(["serve"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "environment variable DOCS_AUTH_NOT_SET is not set" in line
    assert not (tmp_path / "a.db").exists()


def test_policy_check_knows_the_gateways_tools_by_their_upstream(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[tools.ops__deploy_release]\nrequired_approvals = 2\n", encoding="utf-8")
    monkeypatch.delenv("APPROVALS_MCP", raising=False)
    assert main(["policy", "check", str(policy)]) == 2  # no gateway: no such tool
    assert "ops__deploy_release" in capsys.readouterr().err
    monkeypatch.setenv("APPROVALS_MCP", str(ROOT / "examples" / "mcp.toml"))
    assert main(["policy", "check", str(policy)]) == 0
    assert "tools.ops__deploy_release: approvers anyone; 2 approval(s)" in capsys.readouterr().out
    policy.write_text("[tools.docs__search]\nrequired_approvals = 2\n", encoding="utf-8")
    assert main(["policy", "check", str(policy)]) == 2  # no upstream named docs
