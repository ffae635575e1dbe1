"""The Postgres backend: an asyncpg pool that drives the shared transaction bodies
(store.sql), its reading of the shared SQL, and its migrations."""
