"""The SQLite engine: one write connection on its own thread, BEGIN IMMEDIATE, WAL."""
