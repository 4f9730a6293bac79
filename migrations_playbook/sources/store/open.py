"""Open a store by its URI: PostgreSQL (langgraph-checkpoint-postgres tables) or SQLite."""

from __future__ import annotations

from migrations_playbook.sources.store.tables import Store, StoreError, redact


def open_store(uri: str) -> Store:
    """Open ``uri`` read-only. Raises StoreError (bad URI, driver missing, not a checkpointer
    database) or StoreUnreachable (no server, no file)."""
    scheme = uri.partition(":")[0].lower()
    if scheme in ("postgresql", "postgres"):
        from migrations_playbook.sources.store.postgres import PostgresStore

        return PostgresStore(uri)
    if scheme == "sqlite":
        from migrations_playbook.sources.store.sqlite import SqliteStore

        return SqliteStore(uri)
    raise StoreError(
        f"--checkpointer must be postgresql://... (langgraph-checkpoint-postgres) or sqlite:///ABS/PATH.db "
        f"(langgraph-checkpoint-sqlite), got {redact(uri)!r}"
    )
