"""`approvals-bot policy check` reads and reports the window and audit-only keys."""

from __future__ import annotations

from tests.cli.operator_support import Home


def test_policy_check_reports_windows_and_audit_tools(home: Home) -> None:
    good = home.path / "good.toml"
    good.write_text(
        '[tools.restart_service]\nallow_window = "2h"\nwindow_match = ["service"]\n'
        '[tools.get_status]\nmode = "audit"\n',
        encoding="utf-8",
    )
    code, out, err = home.cli("policy", "check", str(good))
    assert code == 0, err
    assert "approval windows of 2h matching service" in out
    assert "audit only" in out

    bad = home.path / "bad.toml"
    bad.write_text(
        '[tools.restart_service]\nwindow_match = ["service"]\nmode = "loud"\n', encoding="utf-8"
    )
    code, out, err = home.cli("policy", "check", str(bad))
    assert code == 2
    assert "tools.restart_service.window_match: names the fields a window matches" in err
    assert 'tools.restart_service.mode: must be "approve" (the default) or "audit"' in err
