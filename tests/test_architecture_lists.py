"""The lists docs/architecture.md and docs/store.md keep by hand stay the code's: the
notifier's events (and which of them answer where they posted) and the store's concept
protocols."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol, get_args

from bot.service.events import Event, Posting
from store.api import Store
from tests.test_layers import CODE, _section

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
STORE_DOC = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
NAME = re.compile(r"[A-Z]\w+")


def _names(text: str) -> set[str]:
    return {span for span in CODE.findall(text) if NAME.fullmatch(span)}


def documented_events(text: str) -> tuple[set[str], set[str]]:
    """(every event, the events that answer where they posted) as the Service section
    lists them: between "over frozen events" and "Implementations:"."""
    service = _section(text, "The public interfaces")
    listed = service[service.index("over frozen events") : service.index("Implementations:")]
    posting, _, rest = listed.partition("answer where they were")
    return _names(posting) | _names(rest), _names(posting)


def test_the_architecture_doc_lists_every_notifier_event() -> None:
    events, posting = documented_events(ARCHITECTURE)
    assert events == {kind.__name__ for kind in get_args(Event)}
    assert posting == {kind.__name__ for kind in get_args(Posting)}


def store_protocols() -> set[str]:
    return {base.__name__ for base in Store.__bases__ if base is not Protocol}


def test_the_docs_name_every_store_protocol() -> None:
    architecture = _section(ARCHITECTURE, "The public interfaces")
    listed = architecture[architecture.index("`Store` is the sum") :]
    listed = listed[: listed.index("store/records.py")]
    assert _names(listed) - {"Store"} == store_protocols()
    in_store_doc = STORE_DOC[STORE_DOC.index("`Store` (`store/api/`) is the sum") :]
    in_store_doc = in_store_doc[: in_store_doc.index("\n\n")]
    assert _names(in_store_doc) - {"Store"} == store_protocols()


def test_the_list_checks_see_a_missing_name() -> None:
    text = (
        "\n## The public interfaces\n\nover frozen events: `RunStarted` answer where they "
        "were posted; `RunFailed` answer nothing. Implementations: `SlackNotifier`\n"
    )
    assert documented_events(text) == ({"RunStarted", "RunFailed"}, {"RunStarted"})
    assert "RunNeedsMigration" in {kind.__name__ for kind in get_args(Event)}
    assert {"RunStore", "SealStore", "MaintenanceStore"} <= store_protocols()
