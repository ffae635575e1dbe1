"""The SQLite backend: one write connection on its own thread, BEGIN IMMEDIATE, WAL; one
class per concept of store.api, joined by SqliteStore."""
