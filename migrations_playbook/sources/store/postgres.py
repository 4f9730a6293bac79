"""Read-only access to langgraph-checkpoint-postgres's tables (`PostgresStore`).

``postgresql://...``: the ``PostgresSaver`` / ``AsyncPostgresSaver`` tables ``checkpoints``,
``checkpoint_blobs`` and ``checkpoint_writes``, read in one ``REPEATABLE READ READ ONLY``
transaction (one consistent snapshot, and the server refuses any write in it), decoded as
the saver decodes them (`migrations_playbook.sources.store.tables` holds what the stores share).
The store can also be read in parts (`PostgresStore.share`): contiguous ranges of thread
ids, each on its own connection in the snapshot the first exported, so that several
processes read one consistent state (`scan.partitioned`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple

from migrations_playbook.sources.store.tables import (
    _COUNT_SQL,
    STREAM_BATCH,
    Head,
    StoreError,
    StoreUnreachable,
    ThreadHeads,
    _config,
    _group,
    _json,
    _parent_config,
    _prefetched,
    _serde,
    _sorted_writes,
    redact,
    scrub,
)

POSTGRES_PACKAGES = "langgraph-checkpoint-postgres 'psycopg[binary]'"
"""What to install for ``--checkpointer postgresql://`` (or the ``langgraph-playbook[postgres]`` extra)."""

_SPLIT_SQL = (
    "SELECT count(*), percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY thread_id) FROM checkpoints WHERE checkpoint_ns = ''"
)
"""Root checkpoints, and the thread ids that split them into equal parts (`PostgresStore.share`)."""

SHARE_MIN_THREADS = 1_000
"""Below this many root checkpoints a store is read by one process (a worker's start costs more)."""


@dataclass(frozen=True)
class Part:
    """One range of a partitioned scan: the threads from ``after`` (included) to ``before``
    (excluded; None: no bound), read in the exported ``snapshot``."""

    snapshot: str
    after: str | None
    before: str | None


# -- PostgreSQL ----------------------------------------------------------------------

_PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

_PG_HEADS_SQL = """
WITH heads AS (
    SELECT DISTINCT ON (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id,
        metadata -> 'parents' ->> '' AS called_from
    FROM checkpoints{range}
    ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC
), current AS (
    SELECT heads.*, first_value(CASE WHEN checkpoint_ns = '' THEN checkpoint_id END)
        OVER (PARTITION BY thread_id ORDER BY checkpoint_ns) AS root_id
    FROM heads
)
SELECT
    c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint::text, c.metadata::text,
    (
        SELECT array_agg(array[convert_to(bl.channel, 'UTF8'), convert_to(bl.type, 'UTF8'), bl.blob])
        FROM jsonb_each_text(c.checkpoint -> 'channel_versions')
        JOIN checkpoint_blobs bl
            ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
            AND bl.channel = jsonb_each_text.key AND bl.version = jsonb_each_text.value
    ) AS channel_values,
    (
        SELECT array_agg(array[convert_to(cw.task_id, 'UTF8'), convert_to({task_path}, 'UTF8'),
                               convert_to(cw.channel, 'UTF8'), convert_to(cw.idx::text, 'UTF8'),
                               convert_to(coalesce(cw.type, ''), 'UTF8'), cw.blob])
        FROM checkpoint_writes cw
        WHERE cw.thread_id = c.thread_id AND cw.checkpoint_ns = c.checkpoint_ns
            AND cw.checkpoint_id = c.checkpoint_id
    ) AS pending_writes
FROM current h
CROSS JOIN LATERAL (
    SELECT * FROM checkpoints x
    WHERE x.thread_id = h.thread_id AND x.checkpoint_ns = h.checkpoint_ns AND x.checkpoint_id = h.checkpoint_id
) c
WHERE h.root_id IS NOT NULL AND (h.checkpoint_ns = '' OR strpos(h.checkpoint_ns, ':') = 0 OR h.called_from = h.root_id)
ORDER BY h.thread_id, h.checkpoint_ns
"""
"""Every namespace head that `get_state` can reach, with its blobs and pending writes (the columns
`PostgresSaver.get_tuple` reads): the root, and the subgraph calls of the root's current step
(their metadata ``parents[""]`` is the root head; older calls are history). Streamed: the heads
are sorted once, narrow (ids only), the root's id is carried along them by a window, and each
head's row, blobs and writes are looked up by primary key in that order, so the first rows
reach the client while the server is still reading (no sort of the wide rows at the end). The
``jsonb`` columns come as text, decoded by `_json`."""

_PG_SENDS_SQL = """
SELECT type, blob FROM checkpoint_writes
WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s AND channel = '__pregel_tasks'
ORDER BY task_path, task_id, idx
"""
"""Pending sends of a parent checkpoint: checkpoints before format 4 keep them there."""


def _pg_driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"--checkpointer postgresql:// needs the PostgreSQL driver: pip install {POSTGRES_PACKAGES} "
            "(or pip install 'langgraph-playbook[postgres]')"
        ) from None
    return psycopg


class PostgresStore:
    """The tables of `PostgresSaver`, in one read-only, repeatable-read transaction."""

    def __init__(self, uri: str, *, part: Part | None = None) -> None:
        """``part``: read only that range of threads, in the snapshot another store exported
        (`share`), as one worker of a partitioned scan."""
        psycopg = _pg_driver()
        self.label = redact(uri)
        self.part = part
        self._uri = uri
        self._psycopg = psycopg
        self._serde = _serde()
        try:
            self._conn = psycopg.connect(uri, autocommit=False, connect_timeout=5, application_name="playbook")
        except psycopg.OperationalError as exc:
            if getattr(exc, "sqlstate", None):  # the server answered: a bad user, password or database
                raise StoreError(f"checkpointer {self.label} refused the connection: {self._says(exc)}") from None
            raise StoreUnreachable(f"checkpointer {self.label} is unreachable: {self._says(exc)}") from None
        except (psycopg.ProgrammingError, psycopg.InterfaceError) as exc:
            raise StoreError(f"--checkpointer {self.label} is not a usable PostgreSQL URI: {self._says(exc)}") from None
        self._conn.read_only = True
        self._conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with self._guard():
            if part is not None:  # the first statement of the transaction: it reads what the exporter reads
                from psycopg import sql

                self._conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(part.snapshot)))
            if self._conn.info.server_version >= 110000:
                # The heads query's cost estimate grows with the store; past jit_above_cost the server
                # would spend ~0.5 s compiling a plan that runs once. A session setting, nothing written.
                self._conn.execute("SET jit = off")
            found = self._conn.execute(
                "SELECT " + ", ".join("to_regclass(%s) IS NOT NULL" for _ in _PG_TABLES), _PG_TABLES
            ).fetchone()
            missing = [t for t, ok in zip(_PG_TABLES, found, strict=True) if not ok]
            if missing:
                raise StoreError(
                    f"checkpointer {self.label} has no {', '.join(missing)} table: not a langgraph-checkpoint-postgres "
                    "database, or another schema (set it with ?options=-csearch_path%3D<schema>); "
                    "the gate never runs setup()"
                )
            has_path = self._conn.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'checkpoint_writes'"
                " AND column_name = 'task_path' AND table_schema = ANY(current_schemas(false))"
            ).fetchone()
        self._task_path = "cw.task_path" if has_path else "''"

    def heads_sql(self, *, after: bool = False, before: bool = False) -> str:
        """`_PG_HEADS_SQL` for this store's columns, limited to the threads from ``after`` (a
        parameter, included) and before ``before`` (excluded) when asked."""
        bounds = (["thread_id >= %(after)s"] if after else []) + (["thread_id < %(before)s"] if before else [])
        where = "\n    WHERE " + " AND ".join(bounds) if bounds else ""
        return _PG_HEADS_SQL.format(task_path=self._task_path, range=where)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except self._psycopg.OperationalError as exc:
            raise StoreUnreachable(f"checkpointer {self.label} stopped answering: {self._says(exc)}") from None
        except self._psycopg.Error as exc:
            raise StoreError(f"checkpointer {self.label} refused a read: {self._says(exc)}") from None

    def _says(self, exc: Exception) -> str:
        """The driver's message, on one line, without the URI's password."""
        return scrub(" ".join(str(exc).split()) or type(exc).__name__, self._uri)

    def count_threads(self) -> int:
        with self._guard():
            row = self._conn.execute(_COUNT_SQL).fetchone()
        return int(row[0])

    def share(self, parts: int) -> list[Part]:
        """This store's snapshot split into ``parts`` contiguous ranges of thread ids (about as
        many root checkpoints each), for `PostgresStore(uri, part=...)` in other processes:
        ``pg_export_snapshot`` (allowed in a read-only transaction; the snapshot lives as long as
        this transaction, so this store stays open while they read). [] for a store too small to
        split (`SHARE_MIN_THREADS`), or a server that refuses to export its snapshot."""
        if parts < 2 or self.part is not None:
            return []
        fractions = [i / parts for i in range(1, parts)]
        try:
            roots, bounds = self._conn.execute(_SPLIT_SQL, (fractions,)).fetchone()
            if not roots or roots < SHARE_MIN_THREADS:
                return []
            snapshot = self._conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        except self._psycopg.Error as exc:
            if isinstance(exc, self._psycopg.OperationalError):
                raise StoreUnreachable(f"checkpointer {self.label} stopped answering: {self._says(exc)}") from None
            self._conn.rollback()  # a refused export: read alone, from a new snapshot as at the start
            return []
        edges = [None, *bounds, None]
        return [Part(snapshot=snapshot, after=edges[i], before=edges[i + 1]) for i in range(parts)]

    def threads(self) -> Iterator[ThreadHeads]:
        part = self.part
        query = self.heads_sql(
            after=part is not None and part.after is not None, before=part is not None and part.before is not None
        )
        params = {"after": part.after, "before": part.before} if part is not None else None
        with self._guard():
            with self._conn.cursor(name="playbook_heads", binary=True) as cursor:
                cursor.itersize = STREAM_BATCH
                cursor.execute(query, params)
                yield from _group(self._decode(row) for row in _prefetched(cursor))

    def columns(self, table: str, conn: Any = None) -> list[str]:
        """The columns of one saver table (of this store, or of ``conn``'s database), in order."""
        from psycopg.rows import tuple_row

        found = (
            (conn or self._conn)
            .cursor(row_factory=tuple_row)
            .execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " AND table_schema = ANY(current_schemas(false)) ORDER BY ordinal_position",
                (table,),
            )
            .fetchall()
        )
        return [row[0] for row in found]

    def copy_into(self, target: Any) -> None:
        """Every row of the saver tables into ``target`` (a psycopg connection to another database
        whose saver tables exist), from this read-only snapshot: ``COPY ... TO STDOUT`` here (a
        read), ``COPY ... FROM STDIN`` there; the columns both have."""
        with self._guard():
            for table in _PG_TABLES:
                theirs = set(self.columns(table, target))
                shared = ", ".join(f'"{c}"' for c in self.columns(table) if c in theirs)
                with self._conn.cursor().copy(f"COPY (SELECT {shared} FROM {table}) TO STDOUT (FORMAT BINARY)") as out:
                    with target.cursor().copy(f"COPY {table} ({shared}) FROM STDIN (FORMAT BINARY)") as into:
                        for block in out:
                            into.write(block)

    def _decode(self, row: tuple[Any, ...]) -> tuple[str, Head]:
        try:
            return self._decode_row(row)
        except self._psycopg.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - a row the serializer cannot read is reported, not fatal
            try:
                metadata = _json(row[5])
            except (ValueError, RecursionError):
                metadata = None
            metadata = metadata if isinstance(metadata, dict) else {}
            return row[0], Head(ns=row[1], saved=None, error=f"{type(exc).__name__}: {exc}", metadata=metadata)

    def _decode_row(self, row: tuple[Any, ...]) -> tuple[str, Head]:
        thread_id, ns, checkpoint_id, parent_id, checkpoint_text, metadata_text, blobs, writes = row
        # the jsonb columns as PostgresSaver wrote them (json.loads gives Any, and dict() of it dict[Any, Any])
        checkpoint = cast(Checkpoint, dict(_json(checkpoint_text)))
        metadata: CheckpointMetadata | None = _json(metadata_text)
        values = dict(checkpoint.get("channel_values") or {})
        for channel, kind, blob in blobs or ():
            if bytes(kind) != b"empty":
                value = bytes(blob) if blob is not None else None
                # loads_typed is typed bytes, but the blob column is nullable: a NULL stays None, as PostgresSaver's
                # own _load_blobs passes it (its saver writes NULL only beside "empty", skipped above)
                typed = cast("tuple[str, bytes]", (bytes(kind).decode(), value))
                values[bytes(channel).decode()] = self._serde.loads_typed(typed)
        if int(checkpoint.get("v", 1)) < 4 and parent_id:
            sends = [
                self._serde.loads_typed((kind, bytes(blob)))
                for kind, blob in self._conn.execute(_PG_SENDS_SQL, (thread_id, ns, parent_id))
            ]
            if sends:  # what BasePostgresSaver._migrate_pending_sends does
                values["__pregel_tasks"] = sends
                versions = dict(checkpoint.get("channel_versions") or {})
                versions["__pregel_tasks"] = max(versions.values()) if versions else "1"
                checkpoint["channel_versions"] = versions
        checkpoint["channel_values"] = values
        decoded = _sorted_writes(
            [
                (
                    bytes(task_id).decode(),
                    bytes(path).decode(),
                    bytes(channel).decode(),
                    int(bytes(idx).decode()),
                    self._serde.loads_typed((bytes(kind).decode(), bytes(blob))),
                )
                for task_id, path, channel, idx, kind, blob in writes or ()
            ]
        )
        saved = CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=metadata or {},
            parent_config=_parent_config(thread_id, ns, parent_id),
            pending_writes=[(w.task_id, w.channel, w.value) for w in decoded],
        )
        return thread_id, Head(ns=ns, saved=saved, writes=decoded, metadata=saved.metadata)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.rollback()
        self._conn.close()
