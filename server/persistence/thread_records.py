"""The runtime's thread and run records, journaled in ``records.sqlite`` on every write that changes them.

After every runtime operation that changes a thread or its runs (`RECORD_WRITES`), and
before the server answers, that thread's record and runs are written to
``.langgraph_api/records.sqlite`` (one row per thread). At start-up the rows are laid over
the pickled records, written back in one pickle, and cleared (`_journaled_records`). So
after a SIGKILL a thread's status and interrupts agree with its checkpoints: an answered
approval never shows ``interrupted`` again. Assistant and cron changes, and the few thread
operations whose thread is not known in advance (prune, a stateless run), rewrite the whole
pickle instead (a copy writes the copy's row, once it is known).

A thread's record also agrees with its runs and its head checkpoint after every operation
that touches them (`thread_status.SETTLED_AFTER`): a copy, every update, a run created,
cancelled (by run ids, by status, by assistant; interrupt or rollback), deleted or set to
a status. `thread_status.settle` is the one place that derives it: ``busy`` while a run is
in flight, else from the head (``interrupted``/``idle``; ``error`` kept after a failed
run). The runtime copied a thread as ``idle`` with no values or interrupts, set an
update's record from the checkpoint it started from, left a deleted run's thread as it
was, and set a thread ``idle`` when a pending run on it was cancelled, even with an
approval pending at its head or another run in flight.

The wrapped operations write through `_RECORDS`, which `dev_checkpointer` sets while the
server runs; thread deletes and patches are also serialized here (`index_lock`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import pickle
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

from server.persistence import thread_status
from server.persistence.acknowledged import Acknowledged, mark_journal_table
from server.persistence.checked_pickles import checksum_on_sync, write_checked
from server.persistence.files import RECORDS_NAME
from server.persistence.index_lock import _HOLD_AN_INDEX, _INDEX_LOCK, _one_at_a_time
from server.persistence.record_index import index_of

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


class _Records:
    """The runtime's record store and its journal (one row per thread): what the wrapped operations write.

    Rows and pickles are made in the event loop, between two operations' steps, and
    written by aiosqlite's thread in that order; ``seq`` keeps an older row from
    replacing a newer one, and a full pickle deletes only the rows it holds.
    """

    def __init__(self, store: Any, journal: Any, seq: int = 0, acknowledged: Acknowledged | None = None) -> None:
        self.store = store
        self.journal = journal
        self.seq = seq
        """The last sequence number given out: starts at the journal's highest, which a row
        of an earlier process can hold (a row whose ``seq`` is not above its stored one is
        dropped, so a new process counting from 0 lost every write after a crash restart),
        or at the journal's own count of acknowledged writes, when the rows are gone."""
        self.acknowledged = acknowledged
        """The marker file: each write's seq, once committed (`acknowledged`)."""
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
        async with self.journal.execute("DELETE FROM threads WHERE seq <= ?", (upto,)) as cursor:
            deleted = cursor.rowcount  # cursors left open make later statements fail (SQLITE_MISUSE)
        if deleted > 0:
            # Then the journal's count moves to the pickle, a commit after the delete: a journal that lost
            # the delete (its rows would be laid over the newer pickle) lost this too, and is refused. Not
            # when nothing was deleted: a write that changes nothing would still add a frame to the -wal.
            async with self.journal.execute("UPDATE acknowledged SET mark = max(mark, ?) WHERE name = 'threads'", (upto,)):
                pass
            self._acknowledge(upto)

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
        if rows:
            self._acknowledge(max(row[1] for row in rows))

    def _acknowledge(self, seq: int) -> None:
        if self.acknowledged is not None:
            self.acknowledged.acknowledge(RECORDS_NAME, "threads", seq)

    def _records_of(self, thread_id: UUID) -> tuple[dict[str, Any] | None, list[bytes]]:
        """The thread's record and its runs' pickles, found through the store's `RecordIndex`:
        a scan of every record per operation made each run cost more with every thread stored."""
        index = index_of(self.store)
        return index.thread(thread_id), [self._pickled_run(r) for r in index.runs_of(thread_id)]

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
        write_checked(path, data)


async def _journaled_records(store: Any, journal: Any, acknowledged: Acknowledged | None = None) -> _Records:
    """Lay the journal over the records start_pool loaded, and journal every later change (counted in
    ``acknowledged``, the marker file, when given)."""
    # WAL without a sync per commit: a commit survives the process (SIGKILL), not a power cut.
    for statement in (
        "PRAGMA journal_mode=WAL",
        "PRAGMA synchronous=NORMAL",
        "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, record BLOB NOT NULL)",
    ):
        async with journal.execute(statement):
            pass
    mark = await mark_journal_table(journal, "threads")
    async with journal.execute("SELECT thread_id, seq, record FROM threads ORDER BY seq") as cursor:
        rows = await cursor.fetchall()
    journaled: dict[UUID, tuple[dict[str, Any] | None, list[dict[str, Any]]]] = {}
    for thread_id, _, record in rows:  # one row per thread; the later seq wins, as the rows were written
        thread, runs = pickle.loads(record)
        journaled[UUID(thread_id)] = (thread, [pickle.loads(run) if isinstance(run, bytes) else run for run in runs])
    if journaled:  # in one pass over the records (one pass per row grew with rows x records)
        store["threads"] = [t for t in store["threads"] if t["thread_id"] not in journaled] + [
            thread for thread, _ in journaled.values() if thread
        ]
        store["runs"] = [r for r in store["runs"] if r["thread_id"] not in journaled] + [
            run for _, runs in journaled.values() for run in runs
        ]
    for run in store["runs"]:
        if run["status"] == "running":  # as start_pool does: no worker runs yet, so a crash cut it off
            run["status"] = "pending"
    if not getattr(store, "_journaled", False):
        _wrap_the_runtime(store)
    # Count on from the journal's highest seq: rows an earlier process left (the ones its last
    # full pickle did not hold) must not outrank this process's writes; nor may a write count
    # below what the journal already acknowledged (the mark stays when the rows are gone).
    return _Records(store, journal, seq=max([mark, *(row[1] for row in rows)]), acknowledged=acknowledged)


def _wrap_the_runtime(store: Any) -> None:
    """Once per process: every record-changing operation writes through `_RECORDS`."""
    from langgraph_runtime_inmem import _persistence, ops  # type: ignore[import-untyped]  # the runtime ships no type info

    checksum_on_sync(store)  # the runtime's writer, with the checksum line after the data
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


def _then_write(operation: Callable[..., Awaitable[Any]], owner: str) -> Callable[..., Awaitable[Any]]:
    signature = inspect.signature(operation)
    name = operation.__name__
    settled = (owner, name) in thread_status.SETTLED_AFTER

    @functools.wraps(operation)
    async def written(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        matched: list[UUID] = []
        touched = thread_status.before(owner, name, arguments, _RECORDS.store) if _RECORDS is not None else None
        try:
            with thread_status.around(owner, name, arguments, touched):
                result = await operation(*args, **kwargs)
        except BaseException:
            if settled and owner == "Runs":  # a run operation that failed part-way (a cancel of several runs)
                await _settle(owner, name, arguments, None, touched)
            raise
        else:
            if settled:
                result, matched = await _settle(owner, name, arguments, result, touched)
            return result
        finally:
            if (records := _RECORDS) is not None:  # None after shutdown began: the final pickle has it
                try:
                    threads = _changed_threads(owner, name, arguments, records.store)
                except (KeyError, TypeError, ValueError):  # an argument of an unexpected shape
                    threads = WHOLE_STORE
                if owner == "Threads" and name == "copy" and matched:
                    threads = matched  # the copy's id is known now: its row, not the whole pickle
                if threads is WHOLE_STORE and touched is not None and touched.thread_ids:
                    threads = touched.thread_ids  # a cancel by status or by assistant: the threads it touched
                if threads is WHOLE_STORE:
                    await records.write_all()
                else:
                    await records.write_threads(threads)

    return written


async def _settle(
    owner: str, name: str, arguments: dict[str, Any], result: Any, touched: thread_status.Touched | None
) -> tuple[Any, list[UUID]]:
    """`thread_status.settle_after`, which must not turn the operation's answer into a 500 (a retry would copy twice)."""
    if _RECORDS is None:
        return result, []
    try:
        return await thread_status.settle_after(owner, name, arguments, result, touched)
    except Exception:
        logging.getLogger(__name__).exception(
            "%s.%s ended, but setting its thread's record from its runs and head failed: the record may "
            "lag its checkpoints until the thread's next run",
            owner,
            name,
        )
        return result, []


def local_thread(thread_id: str | UUID) -> tuple[bool, dict[str, Any] | None]:
    """The runtime's own record of a thread, when this process holds it: (True, the record or None
    for no such thread) on `langgraph dev` with these records journaled; (False, None) anywhere else
    (before start-up, after shutdown began, the standalone Agent Server) or for an id that is not a
    UUID, where the caller asks the API instead. Found through `RecordIndex`: no scan of every thread."""
    records = _RECORDS
    if records is None:
        return False, None
    try:
        key = _uuid(thread_id)
    except ValueError:
        return False, None
    return True, index_of(records.store).thread(key)


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
        index = index_of(store)
        threads = [run["thread_id"] for run_id in run_ids if (run := index.run(run_id)) is not None]
        return threads if run_ids and len(threads) == len(run_ids) else WHOLE_STORE
    return WHOLE_STORE


def _uuid(value: UUID | str) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))
