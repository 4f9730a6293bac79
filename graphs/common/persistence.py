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
``graphs.common.persistence.dev_checkpointer`` (``"backend": "custom"``):

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
  thread operations whose thread is not known in advance (copy, prune, a stateless
  run), rewrite the whole pickle instead;
* a run cut off by a crash is retried from its last checkpoint (input and command
  dropped), so the crash does not re-send a resume answer or a command to a thread
  that already moved past it;
* the server's wrapper around a custom checkpointer gets the saver's synchronous
  methods, which a subgraph invoked synchronously inside a node needs, and the
  saver's own ``aget_delta_channel_history`` (two queries instead of one checkpoint
  read per step back to the last snapshot);
* each graph's context JSON schema, which the server reads on every run with a
  context, is built once per schema class.

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

LOCAL_RUNTIME = "inmem"
"""The runtime edition `langgraph dev` runs (``LANGGRAPH_RUNTIME_EDITION``)."""

FINAL_RUN_STATUSES = frozenset({"success", "error", "timeout", "interrupted"})
"""Run statuses the runtime never changes back (a resume or retry is a new run)."""

WHOLE_STORE = None
"""`_changed_threads`' answer when the operation's threads are not known: rewrite every record."""

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
            f"graphs.common.persistence.dev_checkpointer is for `langgraph dev` only, and this server runs "
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
        saver = AsyncSqliteSaver(conn, serde=Serializer())
        await saver.setup()
        if not owner:
            yield saver
            return
        _let_the_adapter_call_sync_methods()
        _keep_context_schemas()
        await _retry_cut_off_runs_from_their_checkpoints(saver, GLOBAL_STORE)
        await records.write_all()
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

    def __init__(self, store: Any, journal: Any) -> None:
        self.store = store
        self.journal = journal
        self.seq = 0
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
    async with journal.execute("SELECT thread_id, record FROM threads ORDER BY seq") as cursor:
        rows = await cursor.fetchall()
    for thread_id, record in rows:
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
    return _Records(store, journal)


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
            setattr(owner, name, staticmethod(_then_write(operation, owner_path)))


def _then_write(operation: Callable[..., Awaitable[Any]], owner: str) -> Callable[..., Awaitable[Any]]:
    signature = inspect.signature(operation)

    @functools.wraps(operation)
    async def written(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        try:
            return await operation(*args, **kwargs)
        finally:
            if (records := _RECORDS) is not None:  # None after shutdown began: the final pickle has it
                try:
                    threads = _changed_threads(owner, operation.__name__, arguments, records.store)
                except (KeyError, TypeError, ValueError):  # an argument of an unexpected shape
                    threads = WHOLE_STORE
                if threads is WHOLE_STORE:
                    await records.write_all()
                else:
                    await records.write_threads(threads)

    return written


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
