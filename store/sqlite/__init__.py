"""The SQLite engine (aiosqlite): one write connection, BEGIN IMMEDIATE, WAL."""
