"""A value hidden once stays hidden in every later snapshot of the same call.

Approve-with-changes builds a new snapshot from the new arguments. A value that was
hidden because of its neighbours (`{"key": "db_password", "value": ...}`) would be shown
once an approver renamed the key, although the approver never saw it and nobody chose to
reveal it. `carried_redactions` names what must stay hidden.
"""

from __future__ import annotations

from bot.credentials import REDACTED
from bot.review.snapshot import carried_redactions, review_snapshot

DIGEST = "ef" * 32


def test_renaming_the_key_does_not_reveal_the_value() -> None:
    before = {"service": "payments", "key": "db_password", "value": "hunter2"}
    after = {**before, "key": "db_host"}
    first = review_snapshot("set_config", before, digest=DIGEST)
    assert first.arguments["value"] == REDACTED

    naive = review_snapshot("set_config", after, digest=DIGEST)
    assert naive.arguments["value"] == "hunter2"  # the rules alone would show it

    keep = carried_redactions(first, before, after)
    second = review_snapshot("set_config", after, digest=DIGEST, keep_hidden=keep)
    assert second.arguments == {"service": "payments", "key": "db_host", "value": REDACTED}
    assert second.redacted_paths == ["$.value"]
    assert "hunter2" not in second.to_json()
    assert "hunter2" not in second.render_text()


def test_it_stays_hidden_through_a_second_change() -> None:
    first_args = {"key": "db_password", "value": "hunter2", "note": "a"}
    second_args = {**first_args, "key": "db_host"}
    third_args = {**second_args, "note": "b"}
    first = review_snapshot("t", first_args, digest=DIGEST)
    second = review_snapshot(
        "t",
        second_args,
        digest=DIGEST,
        keep_hidden=carried_redactions(first, first_args, second_args),
    )
    third = review_snapshot(
        "t",
        third_args,
        digest=DIGEST,
        keep_hidden=carried_redactions(second, second_args, third_args),
    )
    assert third.arguments["value"] == REDACTED


def test_a_value_the_approver_replaced_is_judged_on_its_own() -> None:
    before = {"key": "db_password", "value": "hunter2"}
    after = {"key": "db_host", "value": "db.internal"}
    first = review_snapshot("t", before, digest=DIGEST)
    assert carried_redactions(first, before, after) == []


def test_nested_and_partly_hidden_values_stay_hidden() -> None:
    before = {
        "env": [{"name": "API_TOKEN", "value": "t0ps3cret"}],
        "dsn": "postgres://app:pw123@db/app",
    }
    after = {"env": [{"name": "API_HOST", "value": "t0ps3cret"}], "dsn": before["dsn"]}
    first = review_snapshot("t", before, digest=DIGEST)
    keep = carried_redactions(first, before, after)
    second = review_snapshot("t", after, digest=DIGEST, keep_hidden=keep)
    assert second.arguments["env"][0]["value"] == REDACTED
    # The rules still hide the password inside the DSN, and only that part.
    assert second.arguments["dsn"] == f"postgres://app:{REDACTED}@db/app"
