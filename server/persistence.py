"""Crash-safe persistence for `langgraph dev` (local only): checkpoints in SQLite, records journaled on every write.

Why: langgraph-runtime-inmem 0.36.7 keeps checkpoints in dicts it pickles every
10 s. Its ``Checkpointer(unpack_hook=...)`` (langgraph_runtime_inmem/checkpoint.py,
lines 289-296), which every state read and the run-creation handler call, builds a
second saver whose dicts register under the same file names in the flush loop
(``_persistence.py`` line 28: ``_stores[d.filename] = weakref.ref(d)``), then
swaps in the first saver's dicts. The throwaway dicts die, the flush loop drops
their dead references (line 62), and from then on the real checkpoints reach disk
only on a graceful stop. A SIGKILL then loses every checkpoint since the first read.
The thread and run records (``.langgraph_ops.pckl``) are flushed every 10 s, so a
crash also loses the last 10 s of them: a thread created just before is gone, an
approved ticket's record still says ``interrupted``.

What this module does instead, when `langgraph.json` names
``server.persistence.dev_checkpointer`` (``"backend": "custom"``):

* checkpoints go to ``.langgraph_api/checkpoints.sqlite`` in the server's working
  folder, through langgraph-checkpoint-sqlite's ``AsyncSqliteSaver`` (WAL, one
  synced commit per checkpoint and per write batch), with the Agent Server's own
  serializer;
* after every runtime operation that changes a thread or its runs, and before the
  server answers, that thread's record and runs are written to
  ``.langgraph_api/records.sqlite`` (one row per thread). At start-up the rows are
  laid over the pickled records, written back in one pickle, and cleared. So after
  a SIGKILL a thread's status and interrupts agree with its checkpoints: an answered
  approval never shows ``interrupted`` again. Assistant and cron changes, and the few
  thread operations whose thread is not known in advance (prune, a stateless run),
  rewrite the whole pickle instead (a copy writes the copy's row, once it is known);
* a run cut off by a crash is retried from its last checkpoint (input and command
  dropped), so the crash does not re-send a resume answer or a command to a thread
  that already moved past it;
* the server's wrapper around a custom checkpointer gets the saver's synchronous
  methods, which a subgraph invoked synchronously inside a node needs, and the
  saver's own ``aget_delta_channel_history`` (two queries instead of one checkpoint
  read per step back to the last snapshot);
* each graph's context JSON schema, which the server reads on every run with a
  context, is built once per schema class;
* a thread's record agrees with its checkpoints after every operation that writes
  checkpoints without a run: a copy (``POST /threads/{id}/copy``), every update
  (``update_state``, at the head or at an earlier checkpoint), a deleted run
  (`_MATCHED_TO_HEAD`). The runtime copies a thread as ``idle`` with no values or
  interrupts, sets an update's record from the checkpoint it started from (an update
  of a paused ticket's head kept the superseded interrupt, so the record said
  ``interrupted`` with an approval the head no longer has), and leaves a deleted run's
  thread as it was;
* a run's checkpoints are deleted with the run when nothing else stands on them
  (`adelete_for_runs` of the saver: the latest run of its thread, started from new
  input); otherwise they are kept, so that the thread's later state stays whole;
* store items (``/store/items``, ``runtime.store``) are journaled in the same
  ``records.sqlite`` before the write returns (`_journal_store_writes`); the
  runtime pickles its store every 10 s;
* the server refuses to start when a stored file cannot be read (`check_stored_data`,
  installed by `refuse_to_start_on_unreadable_data`): the runtime deletes a pickle
  it cannot load and starts with no threads.
* thread deletes and patches run one at a time (`_HOLD_AN_INDEX`): the runtime holds a
  thread's position in its list across an await, so concurrent deletes were 500s or
  removed another thread's record.

Local only: on any runtime but the in-memory one (the standalone Agent Server,
LangSmith Deployments) the factory refuses to start, so a deployment never writes
its checkpoints to a container's SQLite file. Deployments set
``LANGGRAPH_CHECKPOINTER`` without ``backend``/``path`` (deploy/docker-compose.yml),
which replaces this entry and keeps the platform's PostgreSQL.

Nothing happens at import: the databases are opened when the server enters the
factory at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import inspect
import json
import logging
import os
import pickle
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langgraph.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

PERSISTENCE_DIR = Path(".langgraph_api")
"""The runtime's own folder, relative to the server's working folder."""

DATABASE_NAME = "checkpoints.sqlite"
"""The checkpoints' SQLite file inside `PERSISTENCE_DIR` (plus its ``-wal``/``-shm``)."""

RECORDS_NAME = "records.sqlite"
"""The thread-record journal inside `PERSISTENCE_DIR` (plus its ``-wal``/``-shm``)."""

OPS_NAME = ".langgraph_ops.pckl"
"""The runtime's pickle of threads, runs, assistants and crons inside `PERSISTENCE_DIR`."""

STORE_NAMES = ("store.pckl", "store.vectors.pckl")
"""The runtime's pickles of the long-term store (items, and their vectors) inside `PERSISTENCE_DIR`."""

LOCAL_RUNTIME = "inmem"
"""The runtime edition `langgraph dev` runs (``LANGGRAPH_RUNTIME_EDITION``)."""

FINAL_RUN_STATUSES = frozenset({"success", "error", "timeout", "interrupted"})
"""Run statuses the runtime never changes back (a resume or retry is a new run)."""

WHOLE_STORE = None
"""`_changed_threads`' answer when the operation's threads are not known: rewrite every record."""

_MATCHED_TO_HEAD = {("Threads", "copy"), ("Threads.State", "post"), ("Threads.State", "bulk"), ("Runs", "delete")}
"""Operations that write a thread's checkpoints without a run: the record is set from the head afterwards."""

RECORD_WRITES: dict[str, tuple[str, ...]] = {
    "Assistants": ("put", "patch", "delete", "set_latest"),
    "Threads": ("put", "patch", "delete", "prune", "copy", "set_status", "set_joint_status"),
    "Threads.State": ("post", "bulk"),
    "Runs": ("put", "delete", "cancel", "set_status"),
    "Crons": ("put", "update", "delete", "set_next_run_date"),
}
"""The in-memory runtime's operations (langgraph_runtime_inmem.ops) that change its records."""


_RECORDS: _Records | None = None
"""The process's journaled records, once the server entered `dev_checkpointer` (None again at shutdown)."""

_RECORDS_OWNED = False
"""Whether an entry of `dev_checkpointer` owns the records (the first one; later ones only open a saver)."""


def _disown() -> None:
    global _RECORDS_OWNED
    _RECORDS_OWNED = False


class LocalOnlyError(RuntimeError):
    """`dev_checkpointer` was loaded by a server that is not `langgraph dev`."""


def database_path(workdir: Path | None = None) -> Path:
    """Where the checkpoints of a server running in ``workdir`` (default: here) live."""
    return (workdir or Path.cwd()) / PERSISTENCE_DIR / DATABASE_NAME


@contextlib.asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer `langgraph dev` enters at start-up (langgraph.json ``checkpointer.path``)."""
    edition = os.environ.get("LANGGRAPH_RUNTIME_EDITION", LOCAL_RUNTIME)
    if edition != LOCAL_RUNTIME:
        raise LocalOnlyError(
            f"server.persistence.dev_checkpointer is for `langgraph dev` only, and this server runs "
            f"the {edition!r} runtime. Keep the platform's own persistence: set LANGGRAPH_CHECKPOINTER "
            "without backend/path (as deploy/docker-compose.yml does), which replaces langgraph.json's entry."
        )
    import aiosqlite  # only `langgraph dev` needs the driver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph_api.serde import Serializer  # type: ignore[import-untyped]  # the server's own serde; no type info
    from langgraph_runtime_inmem.database import GLOBAL_STORE  # type: ignore[import-untyped]  # loaded by start_pool; no type info

    global _RECORDS, _RECORDS_OWNED
    path = database_path()
    path.parent.mkdir(exist_ok=True)
    # The server enters the factory once per thread that asks for a checkpointer; the records
    # are the process's, so only the first entry lays the journal over them and owns it.
    owner, _RECORDS_OWNED = not _RECORDS_OWNED, True
    async with contextlib.AsyncExitStack() as stack:
        if owner:
            stack.callback(_disown)
            records_db = aiosqlite.connect(path.with_name(RECORDS_NAME), isolation_level=None)
            records = await _journaled_records(GLOBAL_STORE, await stack.enter_async_context(records_db))
            stack.callback(records.close)
        conn = await stack.enter_async_context(aiosqlite.connect(path))
        saver = _dev_saver_class(AsyncSqliteSaver)(conn, serde=Serializer())
        saver.thread_of_run = functools.partial(_thread_of_run, GLOBAL_STORE)
        await saver.setup()
        if not owner:
            yield saver
            return
        _let_the_adapter_call_sync_methods()
        _keep_context_schemas()
        await _retry_cut_off_runs_from_their_checkpoints(saver, GLOBAL_STORE)
        await records.write_all()
        await _journal_store_writes(records.journal)
        _RECORDS = records
        try:
            yield saver
        finally:
            _RECORDS = None
            await records.write_all()  # before the runtime's own final pickle, which writes the same


# -- the records: one journal row per thread --------------------------------------------


class _Records:
    """The runtime's record store and its journal (one row per thread): what the wrapped operations write.

    Rows and pickles are made in the event loop, between two operations' steps, and
    written by aiosqlite's thread in that order; ``seq`` keeps an older row from
    replacing a newer one, and a full pickle deletes only the rows it holds.
    """

    def __init__(self, store: Any, journal: Any, seq: int = 0) -> None:
        self.store = store
        self.journal = journal
        self.seq = seq
        """The last sequence number given out: starts at the journal's highest, which a row
        of an earlier process can hold (a row whose ``seq`` is not above its stored one is
        dropped, so a new process counting from 0 lost every write after a crash restart)."""
        self._pickles = ThreadPoolExecutor(max_workers=1, thread_name_prefix="records-pickle")
        """Writes the whole-store pickles one at a time, in the order they were taken."""
        self._finished: dict[UUID, tuple[tuple[Any, Any], bytes]] = {}
        """run id -> ((status, updated_at), its pickle), for runs in a final status (`FINAL_RUN_STATUSES`)."""

    async def write_all(self) -> None:
        """Pickle every record, then drop the journal rows the pickle holds."""
        self.seq += 1
        upto, data = self.seq, pickle.dumps(dict(self.store), protocol=pickle.HIGHEST_PROTOCOL)
        live = {run["run_id"] for run in self.store["runs"]}
        self._finished = {run_id: kept for run_id, kept in self._finished.items() if run_id in live}
        path = Path(self.store.filename)
        await asyncio.get_running_loop().run_in_executor(self._pickles, _replace_file, path, data)
        async with self.journal.execute("DELETE FROM threads WHERE seq <= ?", (upto,)):
            pass  # cursors left open make later statements fail (SQLITE_MISUSE)

    def close(self) -> None:
        self._pickles.shutdown(wait=True)

    async def write_threads(self, thread_ids: Iterable[UUID]) -> None:
        rows = []
        for thread_id in set(thread_ids):
            thread, runs = self._records_of(thread_id)
            self.seq += 1
            rows.append((str(thread_id), self.seq, pickle.dumps((thread, runs), protocol=pickle.HIGHEST_PROTOCOL)))
        async with self.journal.executemany(
            "INSERT INTO threads (thread_id, seq, record) VALUES (?, ?, ?) ON CONFLICT (thread_id) "
            "DO UPDATE SET seq = excluded.seq, record = excluded.record WHERE excluded.seq > threads.seq",
            rows,
        ):
            pass

    def _records_of(self, thread_id: UUID) -> tuple[dict[str, Any] | None, list[bytes]]:
        """The thread's record and its runs' pickles.

        Both are scans of every record of the server, on every operation: comparing the ids'
        integers skips a Python-level ``UUID.__eq__`` per record (a third of the time with
        thousands of runs). The runtime keeps ids as UUIDs; anything else is compared as it is.
        """
        threads, runs = self.store["threads"], self.store["runs"]
        key = thread_id.int
        try:
            thread = next((t for t in threads if t["thread_id"].int == key), None)
            mine = [r for r in runs if r["thread_id"].int == key]
        except AttributeError:  # an id that is not a UUID
            thread = next((t for t in threads if t["thread_id"] == thread_id), None)
            mine = [r for r in runs if r["thread_id"] == thread_id]
        return thread, [self._pickled_run(r) for r in mine]

    def _pickled_run(self, run: dict[str, Any]) -> bytes:
        """One run record, pickled; a finished run's pickle is kept and reused.

        A row holds every run of its thread, so without this a thread's row cost grew with
        its number of turns (every operation re-pickled every earlier run). The runtime
        changes a finished run only by setting a new status, which stamps ``updated_at``;
        both are part of the key, so a changed run is pickled again.
        """
        if run["status"] not in FINAL_RUN_STATUSES:
            return pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL)
        key = (run["status"], run.get("updated_at"))
        kept = self._finished.get(run["run_id"])
        if kept is not None and kept[0] == key:
            return kept[1]
        data = pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL)
        self._finished[run["run_id"]] = (key, data)
        return data


_PICKLE_LOCK = threading.Lock()
"""One writer at a time for the records pickle (the runtime's writer uses a fixed temporary name)."""


def _replace_file(path: Path, data: bytes) -> None:
    with _PICKLE_LOCK:
        temporary = path.with_name(path.name + ".journaled.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)


async def _journaled_records(store: Any, journal: Any) -> _Records:
    """Lay the journal over the records start_pool loaded, and journal every later change."""
    # WAL without a sync per commit: a commit survives the process (SIGKILL), not a power cut.
    for statement in (
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, record BLOB NOT NULL)",
    ):
        async with journal.execute(statement):
            pass
    async with journal.execute("SELECT thread_id, seq, record FROM threads ORDER BY seq") as cursor:
        rows = await cursor.fetchall()
    for thread_id, _, record in rows:
        thread, runs = pickle.loads(record)
        runs = [pickle.loads(run) if isinstance(run, bytes) else run for run in runs]  # older rows hold dicts
        key = UUID(thread_id)
        store["threads"] = [t for t in store["threads"] if t["thread_id"] != key] + ([thread] if thread else [])
        store["runs"] = [r for r in store["runs"] if r["thread_id"] != key] + runs
    for run in store["runs"]:
        if run["status"] == "running":  # as start_pool does: no worker runs yet, so a crash cut it off
            run["status"] = "pending"
    if not getattr(store, "_journaled", False):
        _wrap_the_runtime(store)
    # Count on from the journal's highest seq: rows an earlier process left (the ones its last
    # full pickle did not hold) must not outrank this process's writes.
    return _Records(store, journal, seq=max((row[1] for row in rows), default=0))


def _wrap_the_runtime(store: Any) -> None:
    """Once per process: every record-changing operation writes through `_RECORDS`."""
    from langgraph_runtime_inmem import _persistence, ops  # type: ignore[import-untyped]  # the runtime ships no type info

    pickle_to_disk = store.sync

    def sync() -> None:
        with _PICKLE_LOCK:
            pickle_to_disk()

    store.sync = sync  # the instance's own writer, which close() uses too
    store._journaled = True
    # The 10 s flush pickles from another thread, so it could catch an operation half done.
    _persistence._stores.pop(store.filename, None)
    for owner_path, names in RECORD_WRITES.items():
        owner: Any = ops
        for part in owner_path.split("."):
            owner = getattr(owner, part)
        for name in names:
            operation = inspect.getattr_static(owner, name).__func__
            written = _then_write(operation, owner_path)
            if (owner_path, name) in _HOLD_AN_INDEX:
                written = _one_at_a_time(written, _INDEX_LOCK)
            setattr(owner, name, staticmethod(written))


_HOLD_AN_INDEX = {("Threads", "delete"), ("Threads", "patch")}
"""Operations that find a thread's position in the runtime's thread list, await (the auth
handler; a delete also its checkpoints), then use the position: ``thread_list.pop(idx)``,
``thread_list[idx] = thread`` (langgraph-runtime-inmem 0.36.7). A delete in between shifts
the list, so concurrent deletes failed with a 500 (``pop index out of range``) or removed
another thread's record, and a patch could overwrite another thread's record. Run one at a
time, no position is stale: only a delete removes threads from the list."""


class _AnyLoopLock:
    """A lock coroutines of any event loop in the process can await: the server calls these
    operations from its API loop and from its workers' loops (a stateless run's worker deletes
    its temporary thread), each in a thread of its own, so an `asyncio.Lock` (bound to one
    loop) cannot be shared. Waiting polls every millisecond; it is held for one operation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def __aenter__(self) -> None:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(0.001)

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()


_INDEX_LOCK = _AnyLoopLock()
"""Held by `_HOLD_AN_INDEX` operations (prune and an assistant's cascade call the wrapped
``Threads.delete`` once per thread, and take it per call)."""


def _one_at_a_time(operation: Callable[..., Awaitable[Any]], lock: _AnyLoopLock) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(operation)
    async def serialized(*args: Any, **kwargs: Any) -> Any:
        async with lock:
            return await operation(*args, **kwargs)

    return serialized


def _then_write(operation: Callable[..., Awaitable[Any]], owner: str) -> Callable[..., Awaitable[Any]]:
    signature = inspect.signature(operation)

    @functools.wraps(operation)
    async def written(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        matched: list[UUID] = []
        try:
            result = await operation(*args, **kwargs)
            if (owner, operation.__name__) in _MATCHED_TO_HEAD and _RECORDS is not None:
                try:
                    result, matched = await _match_records_to_heads(owner, operation.__name__, arguments, result)
                except Exception:  # the operation is done: its answer must not become a 500 (a retry would copy twice)
                    logging.getLogger(__name__).exception(
                        "%s.%s succeeded, but setting its thread's record from the head failed: the record may lag "
                        "its checkpoints until the thread's next run",
                        owner,
                        operation.__name__,
                    )
            return result
        finally:
            if (records := _RECORDS) is not None:  # None after shutdown began: the final pickle has it
                try:
                    threads = _changed_threads(owner, operation.__name__, arguments, records.store)
                except (KeyError, TypeError, ValueError):  # an argument of an unexpected shape
                    threads = WHOLE_STORE
                if owner == "Threads" and operation.__name__ == "copy" and matched:
                    threads = matched  # the copy's id is known now: its row, not the whole pickle
                if threads is WHOLE_STORE:
                    await records.write_all()
                else:
                    await records.write_threads(threads)

    return written


async def _match_records_to_heads(owner: str, name: str, arguments: dict[str, Any], result: Any) -> tuple[Any, list[UUID]]:
    """Set the record of the thread an operation wrote checkpoints of from its head checkpoint.

    The runtime sets status, values and interrupts from the checkpoint a run ends at
    (``Threads.set_joint_status``), but not after the operations that write
    checkpoints without a run: ``Threads.copy`` adds the copy as ``idle`` with no
    values and no interrupts (a copy of a paused ticket held the pending approval in its
    checkpoints and was missing from ``threads.search(status="interrupted")``); an
    update at an earlier ``checkpoint_id`` set the record from that checkpoint, not from
    the head the update wrote, and an update of a paused thread's head kept the interrupt
    it superseded; a deleted run's checkpoints left the record of the state
    they held. The record is set here the way the runtime sets it after an update
    (``Threads.set_status``, from the state at the head), unless a run is in flight on
    the thread: that run sets it when it ends. Returns the operation's result (a copy's
    rows are read here and handed on again) and the threads set.
    """
    conn = arguments.get("conn")
    if name == "copy":
        rows = [row async for row in result]
        thread_ids = [_uuid(row["thread_id"]) for row in rows]

        async def again() -> AsyncIterator[Any]:
            for row in rows:
                yield row

        result = again()
    elif owner == "Threads.State":
        # Every update, also one of the head: the runtime's own record after an update of a
        # paused thread kept the interrupt the update had superseded.
        thread_ids = [_uuid(arguments["config"]["configurable"]["thread_id"])]
    else:  # Runs.delete
        thread_ids = [_uuid(arguments["thread_id"])]
    for thread_id in thread_ids:
        await _match_record_to_head(conn, thread_id)
    return result, thread_ids


async def _match_record_to_head(conn: Any, thread_id: UUID) -> None:
    from langgraph_api.utils import AuthContext  # type: ignore[import-untyped]  # the server's request context
    from langgraph_runtime_inmem import ops  # the runtime ships no type info

    if conn is None:
        return
    if any(run["thread_id"] == thread_id and run["status"] in ("pending", "running") for run in conn.store["runs"]):
        return  # the run in flight sets the record when it ends
    if not any(thread["thread_id"] == thread_id for thread in conn.store["threads"]):
        return
    # Read as the server does for itself (no caller): the operation already checked the caller's rights.
    token = AuthContext.set(None)
    try:
        state = await ops.Threads.State.get(conn, {"configurable": {"thread_id": str(thread_id)}}, subgraphs=False)
    finally:
        AuthContext.reset(token)
    head = {
        "next": list(state.next),
        "values": state.values if state.config is not None else {},
        "tasks": [{"id": task.id, "interrupts": list(task.interrupts)} for task in state.tasks],
    }
    await ops.Threads.set_status(conn, thread_id, head, None)


def _changed_threads(owner: str, name: str, arguments: dict[str, Any], store: Any) -> list[UUID] | None:
    """The threads an operation changed, or `WHOLE_STORE` when they are not known."""
    if owner == "Threads.State":
        return [_uuid(arguments["config"]["configurable"]["thread_id"])]
    if owner == "Threads" and name not in ("copy", "prune"):
        return [_uuid(arguments["thread_id"])]
    if owner == "Runs":
        if arguments.get("thread_id") is not None:
            return [_uuid(arguments["thread_id"])]
        run_ids = {_uuid(r) for r in arguments.get("run_ids") or [arguments.get("run_id")] if r is not None}
        threads = [r["thread_id"] for r in store["runs"] if r["run_id"] in run_ids]
        return threads if run_ids and len(threads) == len(run_ids) else WHOLE_STORE
    return WHOLE_STORE


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))


# -- the server's wrapper around a custom checkpointer ------------------------------------

SYNC_METHODS = ("get_tuple", "list", "put", "put_writes", "delete_thread", "get_delta_channel_history")
"""The saver's synchronous methods, which a graph invoked synchronously inside a node calls."""

FAST_PATHS = ("aget_delta_channel_history",)
"""Async methods BaseCheckpointSaver implements generically and the saver overrides with a fast
path; the wrapper, a BaseCheckpointSaver itself, would otherwise run the generic one."""


def _let_the_adapter_call_sync_methods(adapter: type | None = None) -> None:
    """Pass the synchronous methods, and the saver's fast paths, through the server's wrapper.

    langgraph-api 0.16.7 wraps a custom checkpointer in ``_CustomCheckpointerAdapter``,
    which forwards only the async methods; the sync ones are BaseCheckpointSaver's,
    which raise NotImplementedError. A subgraph invoked synchronously inside a sync
    node (campus_supervisor's supervisor agent) calls them. AsyncSqliteSaver runs
    them on its event loop from the node's worker thread.

    The wrapper does not forward ``aget_delta_channel_history`` either, so every run on
    a thread with a `DeltaChannel` (graphs/common/history.py) rebuilt its messages with
    BaseCheckpointSaver's generic walk: one ``aget_tuple`` (a query and a whole
    checkpoint deserialized) per ancestor back to the last snapshot, up to some 90 per
    run. AsyncSqliteSaver's own version reads the same chain in two queries.

    ``adapter``: the wrapper class (default: the server's; tests pass a stand-in).
    """
    if adapter is None:
        from langgraph_api._checkpointer._adapter import (  # type: ignore[import-untyped]  # no type info
            _CustomCheckpointerAdapter,
        )

        adapter = _CustomCheckpointerAdapter
    for name in SYNC_METHODS:
        if name in vars(adapter):
            continue

        def forward(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return getattr(self._inner, _name)(*args, **kwargs)

        forward.__name__ = name
        setattr(adapter, name, forward)
    for name in FAST_PATHS:
        if name in vars(adapter):
            continue

        async def forward_async(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
            return await getattr(self._inner, _name)(*args, **kwargs)

        forward_async.__name__ = name
        setattr(adapter, name, forward_async)


# -- the context schema the server reads on every run ------------------------------------


def _keep_context_schemas(pregel: Any = None) -> None:
    """Build each context schema's JSON schema once instead of on every run.

    For every run with a context, langgraph-api 0.16.7 (``stream.astream_state``) asks the
    graph for its context's JSON schema, to drop keys the schema does not name; langgraph's
    ``Pregel.get_context_jsonschema`` builds a pydantic ``TypeAdapter`` each time (about
    0.9 ms for fan_room's context, more than the graph's own nodes). The schema of a class
    never changes while the process runs, so it is kept per class, and each caller gets
    its own copy. ``pregel``: the class to patch (default: langgraph's Pregel).
    """
    if pregel is None:
        from langgraph.pregel.main import Pregel

        pregel = Pregel
    built = pregel.get_context_jsonschema
    if getattr(built, "keeps_schemas", False):
        return
    kept: dict[Any, dict[str, Any] | None] = {}

    @functools.wraps(built)
    def get_context_jsonschema(self: Any) -> dict[str, Any] | None:
        schema = self.context_schema
        try:
            if schema not in kept:
                kept[schema] = built(self)
        except TypeError:  # an unhashable schema object: build it as langgraph does
            return built(self)  # type: ignore[no-any-return]  # langgraph's own method
        return copy.deepcopy(kept[schema])

    get_context_jsonschema.keeps_schemas = True  # type: ignore[attr-defined]  # marks the patch: applied once
    pregel.get_context_jsonschema = get_context_jsonschema


# -- runs a crash cut off ------------------------------------------------------------------


async def _retry_cut_off_runs_from_their_checkpoints(saver: BaseCheckpointSaver[Any], store: Any) -> None:
    """Runs a crash left pending continue from their last checkpoint instead of starting over.

    The runtime retries a run it finds pending at start-up with the run's original
    input or command. LangGraph already ignores a repeated input when the thread's
    head was written by the same run, but a command (a resume answer, an update, a
    goto) is applied again to a thread that moved past it. A run that already wrote
    a checkpoint is retried with neither, so LangGraph continues its pending tasks.
    """
    for run in store["runs"]:
        if run["status"] != "pending":
            continue
        config: RunnableConfig = {"configurable": {"thread_id": str(run["thread_id"]), "checkpoint_ns": ""}}
        async for _ in saver.alist(config, filter={"run_id": str(run["run_id"])}, limit=1):
            run["kwargs"]["input"] = None
            run["kwargs"]["command"] = None


# -- deleting a run's checkpoints ----------------------------------------------------------


def _thread_of_run(store: Any, run_id: str) -> str | None:
    """The thread of a run the runtime still has a record of (it deletes the record after the checkpoints)."""
    return next((str(run["thread_id"]) for run in store["runs"] if str(run["run_id"]) == run_id), None)


_RUN_ID = "json_extract(CAST(metadata AS TEXT), '$.run_id')"
"""A checkpoint's ``run_id`` metadata, as langgraph-checkpoint-sqlite's own filters read it."""


@functools.cache
def _dev_saver_class(base: type) -> type:
    """``AsyncSqliteSaver`` with `adelete_for_runs`, which ``DELETE /threads/{id}/runs/{run_id}`` calls.

    Built on first use (the base imports aiosqlite, which only `langgraph dev` needs). The
    server's wrapper forwards the method only when the saver's class defines it, and
    answered every run deletion with a 500 without it.
    """

    class DevSqliteSaver(base):  # type: ignore[misc]  # the base class is passed in (lazy import)
        thread_of_run: Callable[[str], str | None] = staticmethod(lambda run_id: None)
        """run id -> its thread, from the runtime's run records (`dev_checkpointer` sets it)."""

        async def adelete_for_runs(self, run_ids: Iterable[str]) -> None:
            """Delete each run's checkpoints and their writes, when nothing else stands on them.

            BaseCheckpointSaver documents it as deleting every checkpoint and write of the
            runs, and warns that deleting rows a live thread's state is rebuilt from
            corrupts it (a `DeltaChannel` replays the writes back to its last snapshot,
            graphs/common/history.py). So a run's checkpoints go only when no other run
            wrote a checkpoint on its thread after it started, and it started from new
            input (a resume or a continuation writes its answer and its first step's
            results on the previous run's checkpoint, where they would be left pending
            without the run). The thread is then back at the checkpoint before the run;
            otherwise the checkpoints stay, and the thread's state with them. Only the
            run's own thread is touched: a copy carries the same ``run_id`` metadata.
            """
            for run_id in {str(r) for r in run_ids}:
                thread_id = self.thread_of_run(run_id)
                if thread_id is not None:
                    await self._delete_checkpoints_of_run(thread_id, run_id)

        async def _delete_checkpoints_of_run(self, thread_id: str, run_id: str) -> None:
            async with self.lock, self.conn.cursor() as cur:
                await cur.execute(
                    "SELECT checkpoint_ns, checkpoint_id, json_extract(CAST(metadata AS TEXT), '$.source') "
                    f"FROM checkpoints WHERE thread_id = ? AND {_RUN_ID} = ? ORDER BY checkpoint_id",
                    (thread_id, run_id),
                )
                mine = list(await cur.fetchall())
                if not mine:
                    return
                first_root = next((row for row in mine if row[0] == ""), None)
                await cur.execute(
                    f"SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ? AND "
                    f"({_RUN_ID} IS NULL OR {_RUN_ID} != ?) LIMIT 1",
                    (thread_id, mine[0][1], run_id),
                )
                if first_root is None or first_root[2] != "input" or await cur.fetchone() is not None:
                    return  # other checkpoints stand on this run's: kept
                keys = [(thread_id, ns, checkpoint_id) for ns, checkpoint_id, _ in mine]
                await cur.executemany("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", keys)
                await cur.executemany(
                    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", keys
                )
                await self.conn.commit()

    return DevSqliteSaver


# -- the long-term store: every write journaled before it returns --------------------------

_STORE_TABLE = (
    "CREATE TABLE IF NOT EXISTS store_items "
    "(namespace TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, item BLOB, PRIMARY KEY (namespace, key))"
)
"""One row per store item written since the last start: its latest value (NULL: deleted)."""


class _StoreJournal:
    """The store's rows in ``records.sqlite``: what `_journaled_abatch` writes after each batch of puts."""

    def __init__(self, journal: Any, seq: int) -> None:
        self.journal = journal
        self.seq = seq

    async def write(self, data: Any, keys: Iterable[tuple[tuple[str, ...], str]]) -> None:
        rows = []
        for namespace, key in keys:
            item = (data.get(namespace) or {}).get(key)
            self.seq += 1
            value = None if item is None else pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            rows.append((json.dumps(list(namespace), ensure_ascii=False), key, self.seq, value))
        async with self.journal.executemany(
            "INSERT INTO store_items (namespace, key, seq, item) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key) "
            "DO UPDATE SET seq = excluded.seq, item = excluded.item",
            rows,
        ):
            pass


_STORE_JOURNAL: _StoreJournal | None = None
"""The store's journal while the server runs (None before `dev_checkpointer` and after shutdown)."""


async def _journal_store_writes(journal: Any) -> None:
    """Lay the journaled store items over the pickled store, pickle it, and journal every later write.

    langgraph-runtime-inmem 0.36.7 keeps the store (``/store/items``, a graph's
    ``runtime.store``) in a dict it pickles to ``store.pckl`` every 10 s and at a graceful
    stop: a SIGKILL lost the items written in the last seconds, after the server had
    answered. Every batch of puts and deletes now writes the items it changed to the
    journal (one row per item, its latest value) before the batch returns, so before the
    server answers. At start-up the rows are laid over the items the runtime loaded,
    the pickle is rewritten, and the rows it holds are cleared. Vectors (a store with an
    ``index``, which this deployment does not configure) are not journaled.
    """
    global _STORE_JOURNAL
    from langgraph_runtime_inmem import store as inmem_store  # no type info

    async with journal.execute(_STORE_TABLE):
        pass
    async with journal.execute("SELECT namespace, key, seq, item FROM store_items ORDER BY seq") as cursor:
        rows = await cursor.fetchall()
    data = inmem_store.STORE._data
    for namespace, key, _, item in rows:
        items = data[tuple(json.loads(namespace))]
        if item is None:
            items.pop(key, None)
        else:
            items[key] = pickle.loads(item)
    last = max((row[2] for row in rows), default=0)
    if rows and hasattr(data, "sync"):
        await asyncio.to_thread(data.sync)  # nothing serves requests yet
        async with journal.execute("DELETE FROM store_items WHERE seq <= ?", (last,)):
            pass
    store_class = type(inmem_store.STORE)
    if not getattr(store_class.abatch, "journaled", False):
        store_class.abatch = _journaled_abatch(store_class.abatch)
    _STORE_JOURNAL = _StoreJournal(journal, last)


def _journaled_abatch(abatch: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    from langgraph.store.base import PutOp

    @functools.wraps(abatch)
    async def journaled(self: Any, ops: Iterable[Any]) -> Any:
        ops = list(ops)
        results = await abatch(self, ops)
        written = {(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
        if written and (journal := _STORE_JOURNAL) is not None:
            await journal.write(self._data, written)
        return results

    journaled.journaled = True  # type: ignore[attr-defined]  # marks the wrapper: applied once per class
    return journaled


# -- never start empty: every stored file is read before the runtime loads it ------------


class StoredDataError(RuntimeError):
    """A file the server keeps its data in cannot be read: the server does not start."""


def check_stored_data(workdir: Path | None = None) -> dict[str, Any] | None:
    """Read every file the server's data is in, as the server will; raise `StoredDataError` on the first it cannot.

    Returns the records pickle, loaded (None when there is none), so that the runtime
    does not read it a second time. Nothing is written: the SQLite files are read from a
    copy (an open connection to a WAL database writes its ``-shm``, and the last one to
    close checkpoints the WAL into the database). Checks, in ``.langgraph_api/``:

    * ``.langgraph_ops.pckl`` (threads, runs, assistants) and the store's pickles:
      unpickled whole: a class the data names that is gone (a module moved or renamed,
      a library upgrade), a truncated or damaged file, an empty file;
    * ``records.sqlite``: the database is whole (``PRAGMA quick_check``) and every
      journaled record and store item unpickles;
    * ``checkpoints.sqlite``: the database is whole (``PRAGMA quick_check``) and its
      tables can be read.
    """
    folder = (workdir or Path.cwd()) / PERSISTENCE_DIR
    ops = _read_pickle(folder / OPS_NAME, "the threads, runs and assistants")
    for name in STORE_NAMES:
        _read_pickle(folder / name, "the long-term store")
    _check_database(folder / RECORDS_NAME, "the journal of thread records and store items", _read_journal_rows)
    _check_database(folder / DATABASE_NAME, "the checkpoints", _read_checkpoint_tables)
    if ops is not None and not (isinstance(ops, dict) and isinstance(ops.get("threads", []), list)):
        raise StoredDataError(_unreadable(folder / OPS_NAME, "the threads, runs and assistants", "not a dict of records"))
    return ops


def _unreadable(path: Path, holds: str, cause: str) -> str:
    return (
        f"cannot start: {path} ({holds}) cannot be read: {cause}. Nothing was changed. Restore the file from a "
        f"backup, or install the code and libraries that wrote it; move it away only to start without its data."
    )


def _read_pickle(path: Path, holds: str) -> Any:
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:  # unreadable: permissions, a folder in its place, an I/O error
        raise StoredDataError(_unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc
    if not data:
        raise StoredDataError(_unreadable(path, holds, "the file is empty (0 bytes)"))
    try:
        return pickle.loads(data)
    except Exception as exc:  # any cause: each is named in the error, and the server stops
        raise StoredDataError(_unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc


def _check_database(path: Path, holds: str, read: Callable[[Any, Path, str], None]) -> None:
    import shutil
    import sqlite3
    import tempfile

    if not path.exists():
        return
    if path.is_file() and path.stat().st_size == 0:
        raise StoredDataError(_unreadable(path, holds, "the file is empty (0 bytes)"))
    with tempfile.TemporaryDirectory(prefix="stored-data-check-") as scratch:
        copy_path = Path(scratch) / path.name
        try:
            shutil.copyfile(path, copy_path)
            wal = path.with_name(path.name + "-wal")
            if wal.exists():
                shutil.copyfile(wal, copy_path.with_name(copy_path.name + "-wal"))
        except OSError as exc:  # unreadable: permissions, a folder in its place, an I/O error
            raise StoredDataError(_unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc
        try:
            conn = sqlite3.connect(copy_path)
            try:
                problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:
                    raise StoredDataError(_unreadable(path, holds, "the database is damaged: " + "; ".join(problems[:3])))
                read(conn, path, holds)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StoredDataError(_unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc


def _tables(conn: Any) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _read_journal_rows(conn: Any, path: Path, holds: str) -> None:
    tables = _tables(conn)
    if "threads" in tables:
        for thread_id, record in conn.execute("SELECT thread_id, record FROM threads"):
            try:
                _, runs = pickle.loads(record)
                for run in runs:
                    if isinstance(run, bytes):
                        pickle.loads(run)
            except Exception as exc:  # any cause: named in the error
                raise StoredDataError(
                    _unreadable(path, holds, f"the record of thread {thread_id}: {type(exc).__name__}: {exc}")
                ) from exc
    if "store_items" in tables:
        for namespace, key, item in conn.execute("SELECT namespace, key, item FROM store_items"):
            try:
                json.loads(namespace)
                if item is not None:
                    pickle.loads(item)
            except Exception as exc:  # any cause: named in the error
                raise StoredDataError(
                    _unreadable(path, holds, f"store item {namespace} {key!r}: {type(exc).__name__}: {exc}")
                ) from exc


def _read_checkpoint_tables(conn: Any, path: Path, holds: str) -> None:
    for table in sorted(_tables(conn) & {"checkpoints", "writes"}):
        conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # a fixed table name


def refuse_to_start_on_unreadable_data() -> None:
    """Make `langgraph dev` read every stored file before its runtime uses any, and stop on the first it cannot.

    langgraph-runtime-inmem 0.36.7 (``database.start_pool``) loads ``.langgraph_ops.pckl``
    and, when it cannot (a class the pickle names is gone, a damaged file), logs it,
    deletes the file and starts with no threads; a truncated pickle (``EOFError``) is
    taken for an empty one, and the next flush writes the empty records over it. The
    store's pickle is read the same way when its module is imported, and flushed back
    10 s later. So `check_stored_data` runs here, when the server imports its custom app
    (server/webapp.py), the first code of ours the server runs, before its
    lifespan loads the records: a file it cannot read stops the server (exit status 1)
    with one error line naming the file and the cause, the runtime's flush stopped
    first, every file left as it was. The records it read are handed to ``start_pool`` (read once). A no-op
    outside the server (the runtime's lifespan is not loaded).
    """
    import logging
    import sys

    lifespan = sys.modules.get("langgraph_runtime_inmem.lifespan")
    if lifespan is None or getattr(lifespan.start_pool, "checks_stored_data", False):
        return
    from langgraph_runtime_inmem import _persistence, database

    try:
        ops = check_stored_data()
    except StoredDataError as exc:
        _persistence._stores.clear()  # the runtime's 10 s flush would write the store's pickle back
        logging.getLogger(__name__).critical(str(exc))
        raise SystemExit(1) from None  # the line above is the whole story: no traceback of the server's import
    start_pool = lifespan.start_pool

    async def checked_start_pool() -> None:
        if ops is None:
            await start_pool()
            return
        store = database.GLOBAL_STORE
        store.load = functools.partial(store.update, ops)  # read once: hand the checked records over
        try:
            await start_pool()
        finally:
            del store.load

    checked_start_pool.checks_stored_data = True  # type: ignore[attr-defined]  # marks the wrapper: installed once
    setattr(lifespan, "start_pool", checked_start_pool)  # noqa: B010  # a module found at run time
