"""Read-only access to the tables of a self-hosted LangGraph checkpointer: what both stores share.

Two layouts are read, natively (never through the saver classes, whose read
path may set the database up: `SqliteSaver.get_tuple` runs ``setup()``):

* ``postgresql://...``: langgraph-checkpoint-postgres's ``PostgresSaver`` /
  ``AsyncPostgresSaver`` tables ``checkpoints``, ``checkpoint_blobs`` and
  ``checkpoint_writes``, read in one ``REPEATABLE READ READ ONLY`` transaction
  (one consistent snapshot, and the server refuses any write in it):
  `migrations_playbook.sources.store.postgres`;
* ``sqlite:///ABS/PATH.db``: langgraph-checkpoint-sqlite's ``SqliteSaver``
  tables ``checkpoints`` and ``writes``, opened with ``mode=ro``:
  `migrations_playbook.sources.store.sqlite`.

What is read per thread is what `get_state` reads: the latest checkpoint of every
namespace (``""`` and each subgraph call, ``review:<task id>``) with its pending
writes, decoded with LangGraph's serializer exactly as the savers decode them
(inline primitive channel values merged with the blobs, writes in
`writes_sort_key` order). The threads stream in one ordered query, so memory
holds one batch of rows, never the whole store. A PostgreSQL store can also be read
in parts (`PostgresStore.share`): contiguous ranges of thread ids, each on its own
connection in the snapshot the first exported, so that several processes read one
consistent state (`scan.partitioned`).

This module holds what both stores share: the errors, the decoded shapes (`Write`,
`Head`, `ThreadHeads`), the `Store` protocol, URI redaction, `open_store`, and the
decoding and streaming helpers.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from migrations_playbook.sources.compat import writes_sort_key

STREAM_BATCH = 500
"""Rows fetched per round trip from the ordered heads query."""


class StoreError(Exception):
    """A problem with the store: its URI, its driver or its tables (exit 2)."""


class StoreUnreachable(StoreError):
    """The store cannot be reached, or stopped answering (exit 3)."""


@dataclass(frozen=True)
class Write:
    """One pending write of a checkpoint, with the task path the saver stored beside it."""

    task_id: str
    task_path: str
    channel: str
    value: Any


@dataclass
class Head:
    """The latest checkpoint of one namespace of a thread, decoded."""

    ns: str
    saved: CheckpointTuple | None
    """None when the row could not be decoded (`error` says why)."""
    writes: tuple[Write, ...] = ()
    error: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The checkpoint's metadata (decoded apart, so a thread stays attributable when its checkpoint is not)."""


@dataclass
class ThreadHeads:
    """Every namespace head of one thread."""

    thread_id: str
    heads: dict[str, Head] = field(default_factory=dict)

    @property
    def root(self) -> Head | None:
        return self.heads.get("")


class Store(Protocol):
    """A read-only view of one checkpointer database."""

    label: str
    """The URI without its password (safe to print)."""

    def count_threads(self) -> int: ...

    def threads(self) -> Iterator[ThreadHeads]:
        """Every thread with a root checkpoint, in thread id order, streamed."""
        ...

    def close(self) -> None: ...


# -- URIs ----------------------------------------------------------------------------


def redact(uri: str) -> str:
    """The URI without its password: ``postgresql://app@db:5432/lg``."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    netloc, slash, tail = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if not at:
        return uri
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user + '@' if user else ''}{hostport}{slash}{tail}"


def _password(uri: str) -> str | None:
    netloc = uri.partition("://")[2].partition("/")[0]
    userinfo, at, _ = netloc.rpartition("@")
    _user, colon, password = userinfo.partition(":")
    return password if at and colon and password else None


def scrub(text: str, uri: str) -> str:
    """``text`` (a driver's message) with the URI's password taken out."""
    password = _password(uri)
    text = text.replace(uri, redact(uri))
    return text.replace(password, "***") if password else text


def _json(text: str | None) -> Any:
    """A ``jsonb`` column read as text, decoded as psycopg's loader decodes it (``json.loads``;
    reading the text and decoding it here skips the loader's per-value overhead)."""
    return json.loads(text) if text is not None else None


def _serde() -> JsonPlusSerializer:
    """The serializer the savers use by default."""
    return JsonPlusSerializer()


def _sorted_writes(rows: list[tuple[str, str, str, int, Any]]) -> tuple[Write, ...]:
    """(task_id, task_path, channel, idx, value) rows in the order the savers return them."""
    ordered = sorted(rows, key=lambda r: writes_sort_key(r[1], r[0], r[3]))
    return tuple(Write(task_id=r[0], task_path=r[1], channel=r[2], value=r[4]) for r in ordered)


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def _parent_config(thread_id: str, ns: str, parent_id: str | None) -> RunnableConfig | None:
    return _config(thread_id, ns, parent_id) if parent_id is not None else None


def _group(rows: Iterator[tuple[str, Head]]) -> Iterator[ThreadHeads]:
    """Consecutive (thread id, head) rows -> one ThreadHeads per thread that has a root checkpoint."""
    current: ThreadHeads | None = None
    for thread_id, head in rows:
        if current is None or current.thread_id != thread_id:
            if current is not None and current.root is not None:
                yield current
            current = ThreadHeads(thread_id=thread_id)
        current.heads[head.ns] = head
    if current is not None and current.root is not None:
        yield current


PREFETCH_BATCHES = 2
"""Batches fetched ahead while the previous ones are decoded and judged (memory: this many more)."""


def _prefetched(cursor: Any) -> Iterator[tuple[Any, ...]]:
    """The cursor's rows, the next batches fetched by a helper thread meanwhile: the server's work
    (and the wait for it) overlaps the scan's Python work instead of adding to it. psycopg waits
    on the socket without the GIL; the connection serializes the other statements the scan runs
    on it. A fetch error is raised here, in the caller's thread; stopping early stops the helper."""
    import queue
    import threading

    batches: queue.Queue[Any] = queue.Queue(maxsize=PREFETCH_BATCHES)
    stop = threading.Event()
    done = object()

    def fetch() -> None:
        try:
            while not stop.is_set():
                rows = cursor.fetchmany(STREAM_BATCH)
                if not rows:
                    break
                while not stop.is_set():
                    try:
                        batches.put(rows, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
            batches.put(exc)
            return
        batches.put(done)

    helper = threading.Thread(target=fetch, name="playbook-prefetch", daemon=True)
    helper.start()
    try:
        while True:
            item = batches.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        while helper.is_alive():
            with contextlib.suppress(queue.Empty):
                batches.get(timeout=0.1)
        helper.join()


_COUNT_SQL = "SELECT count(DISTINCT thread_id) FROM checkpoints WHERE checkpoint_ns = ''"
"""Threads with a root checkpoint (the progress bar's total)."""
