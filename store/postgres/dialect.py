"""The shared SQL (store.tx) as Postgres runs it.

- `?` placeholders become `$1, $2, ...` in order (the shared SQL has no `?` inside a
  string literal);
- `INDEXED BY name` (SQLite's index hint) goes: Postgres's planner picks the index;
- `CAST(column AS BLOB)` becomes the column: sealed blobs are `bytea` already.
`FOR UPDATE` stays: it locks the row for the rest of the transaction, and so does
`FOR UPDATE SKIP LOCKED` (the sweeps' claims: a row another transaction holds is left
out instead of waited for; SQLite drops both marks, its one writer holds the whole
database). Each statement is translated once and remembered.

The audit sequencer inserts linked events with `insert_linked`, Postgres's own INSERT.
"""

from __future__ import annotations

import re

from store.rows import EVENT_COLUMNS
from store.sql.audit import LinkedRows
from store.tx import Statement, run

_INDEXED_BY = re.compile(r"\s+INDEXED BY \w+")
_CAST_BLOB = re.compile(r"CAST\(([\w.]+) AS BLOB\)")
_TRANSLATED: dict[str, str] = {}


def postgres_sql(sql: str) -> str:
    found = _TRANSLATED.get(sql)
    if found is None:
        found = _TRANSLATED[sql] = _translate(sql)
    return found


def _translate(sql: str) -> str:
    text = _CAST_BLOB.sub(r"\1", _INDEXED_BY.sub("", sql))
    pieces = text.split("?")
    numbered = [pieces[0]]
    for number, piece in enumerate(pieces[1:], start=1):
        numbered.append(f"${number}{piece}")
    return "".join(numbered)


LINKED_EVENTS = (
    f"INSERT INTO audit_events ({EVENT_COLUMNS}) SELECT * FROM unnest(?::bigint[], "
    "?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])"
)  # EVENT_COLUMNS' order: seq, then eight text columns


def insert_linked(rows: LinkedRows) -> Statement:
    """The linked events' INSERT on Postgres: each column's values as one array. One
    statement text for any number of rows, so each connection prepares it once (a
    VALUES row each is a new statement, parsed and planned anew, for every batch size:
    under load every link pass has another)."""
    return run(LINKED_EVENTS, [list(column) for column in zip(*rows, strict=True)])
