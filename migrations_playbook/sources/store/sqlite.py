"""Read-only access to langgraph-checkpoint-sqlite's tables (`SqliteStore`).

``sqlite:///ABS/PATH.db``: the ``SqliteSaver`` tables ``checkpoints`` and ``writes``, opened
with ``mode=ro``, decoded as the saver decodes them (`migrations_playbook.sources.store.tables`
holds what the stores share).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from langgraph.checkpoint.base import CheckpointTuple

from migrations_playbook.sources.store.tables import (
    _COUNT_SQL,
    STREAM_BATCH,
    Head,
    StoreError,
    StoreUnreachable,
    ThreadHeads,
    _config,
    _group,
    _parent_config,
    _serde,
    _sorted_writes,
    redact,
)

# -- SQLite --------------------------------------------------------------------------

_SQLITE_HEADS_SQL = """
SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint, c.metadata
FROM checkpoints c
JOIN (
    SELECT thread_id, checkpoint_ns, max(checkpoint_id) AS checkpoint_id
    FROM checkpoints GROUP BY thread_id, checkpoint_ns
) h ON h.thread_id = c.thread_id AND h.checkpoint_ns = c.checkpoint_ns AND h.checkpoint_id = c.checkpoint_id
ORDER BY c.thread_id, c.checkpoint_ns
"""

_SQLITE_WRITES_SQL = (
    "SELECT task_id, {task_path}, channel, idx, type, value FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)


def _current_calls(rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Head rows (ordered by thread, namespace: the root first) without the subgraph calls of earlier
    steps, which `get_state` never reads (as `_PG_HEADS_SQL` filters them)."""
    root: tuple[str, str] | None = None
    for row in rows:
        thread_id, ns, checkpoint_id = row[0], row[1], row[2]
        if ns == "":
            root = (thread_id, checkpoint_id)
        elif ":" in ns and (
            root is None or root[0] != thread_id or (_json_metadata(row[6]).get("parents") or {}).get("") != root[1]
        ):
            continue
        yield row


def _json_metadata(raw: Any) -> dict[str, Any]:
    try:
        found = json.loads(raw) if raw is not None else {}
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


class SqliteStore:
    """The tables of `SqliteSaver`, opened ``mode=ro`` (SQLite refuses every write on it).

    A database in WAL mode is read as every WAL reader reads it: through its ``-shm``
    index, which SQLite creates (empty) beside the file when no writer has it open.
    The database file itself is never written."""

    def __init__(self, uri: str) -> None:
        self.label = redact(uri)
        parts = urlsplit(uri)
        if parts.netloc or not uri.lower().startswith("sqlite:///") or parts.query:
            raise StoreError(f"--checkpointer for SQLite must be sqlite:///ABS/PATH.db (an absolute path), got {uri!r}")
        path = Path("/" + parts.path.lstrip("/"))  # sqlite:///tmp/x.db and sqlite:////tmp/x.db alike
        if not path.is_file():
            raise StoreUnreachable(f"checkpointer {self.label} is unreachable: no file at {path}")
        self._serde = _serde()
        try:
            self._conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=10, check_same_thread=False)
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"checkpointer {self.label} is not a readable SQLite database: {exc}") from None
        missing = [t for t in ("checkpoints", "writes") if t not in tables]
        if missing:
            self._conn.close()
            raise StoreError(
                f"checkpointer {self.label} has no {', '.join(missing)} table: not a langgraph-checkpoint-sqlite "
                "database (the gate never runs setup())"
            )
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(writes)")}
        self._writes_sql = _SQLITE_WRITES_SQL.format(task_path="task_path" if "task_path" in columns else "''")

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise StoreUnreachable(f"checkpointer {self.label} stopped answering: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"checkpointer {self.label} refused a read: {exc}") from None

    def count_threads(self) -> int:
        with self._guard():
            return int(self._conn.execute(_COUNT_SQL).fetchone()[0])

    def copy_to(self, path: Path) -> None:
        """The whole database, consistent, into a new file at ``path`` (SQLite's online backup,
        read through this read-only connection: the original is never written)."""
        with self._guard():
            target = sqlite3.connect(path)
            try:
                self._conn.backup(target)
            finally:
                target.close()

    def threads(self) -> Iterator[ThreadHeads]:
        with self._guard():
            self._conn.execute("BEGIN")  # one read snapshot for the whole scan
            try:
                cursor = self._conn.execute(_SQLITE_HEADS_SQL)
                cursor.arraysize = STREAM_BATCH
                yield from _group(self._decode(row) for row in _current_calls(cursor))
            finally:
                self._conn.rollback()

    def _decode(self, row: tuple[Any, ...]) -> tuple[str, Head]:
        try:
            return self._decode_row(row)
        except sqlite3.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - a row the serializer cannot read is reported, not fatal
            error = f"{type(exc).__name__}: {exc}"
            return row[0], Head(ns=row[1], saved=None, error=error, metadata=_json_metadata(row[6]))

    def _decode_row(self, row: tuple[Any, ...]) -> tuple[str, Head]:
        thread_id, ns, checkpoint_id, parent_id, kind, blob, metadata = row
        checkpoint = self._serde.loads_typed((kind, blob))
        rows = self._conn.execute(self._writes_sql, (thread_id, ns, checkpoint_id)).fetchall()
        decoded = _sorted_writes(
            [
                (task_id, path, channel, int(idx), self._serde.loads_typed((kind, value)))
                for task_id, path, channel, idx, kind, value in rows
            ]
        )
        saved = CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=json.loads(metadata) if metadata is not None else {},
            parent_config=_parent_config(thread_id, ns, parent_id),
            pending_writes=[(w.task_id, w.channel, w.value) for w in decoded],
        )
        return thread_id, Head(ns=ns, saved=saved, writes=decoded, metadata=saved.metadata)

    def close(self) -> None:
        self._conn.close()
