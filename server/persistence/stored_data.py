"""The server refuses to start when a stored file cannot be read or lost what it held: it would start without it.

`read_stored_data` (and `check_stored_data`, its records only) reads every file in
``.langgraph_api/`` as the server will, without writing anything, and raises
`StoredDataError` naming the first file it cannot read, or that lost what was written to
it, and why (the databases: `integrity`). `refuse_to_start_on_unreadable_data`, which
server/webapp.py calls when the server imports it, runs the check before the runtime
loads any file, says the damage it starts despite (none of it loses anything
acknowledged), and hands the records it read to the runtime.
"""

from __future__ import annotations

import functools
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.persistence.acknowledged import MARKER_NAME, MarkerError, read_marker
from server.persistence.checked_pickles import DamagedPickle, load_checked
from server.persistence.files import DATABASE_NAME, OPS_NAME, PERSISTENCE_DIR, RECORDS_NAME, STORE_NAMES, UNREAD_PICKLES
from server.persistence.integrity import AcknowledgedMarks, StoredDataError, check_database, damaged, unreadable


@dataclass(frozen=True)
class StoredData:
    """What the start-up check read: the records pickle, and the notes of what the start works around."""

    ops: dict[str, Any] | None
    """The records pickle, loaded (None when there is none)."""
    notes: list[str] = field(default_factory=list)
    """Damage the server starts despite, each said at start-up: nothing acknowledged is lost."""


def check_stored_data(workdir: Path | None = None) -> dict[str, Any] | None:
    """Read every file the server's data is in, as the server will; raise `StoredDataError` on the first it cannot.

    Returns the records pickle, loaded (None when there is none); `read_stored_data` also
    returns the notes.
    """
    return read_stored_data(workdir).ops


def read_stored_data(workdir: Path | None = None) -> StoredData:
    """Read every file the server's data is in, as the server will; raise `StoredDataError` on the first it cannot.

    Nothing is written: the SQLite files are read from a copy (`integrity`). Checks, in
    ``.langgraph_api/``:

    * ``acknowledged``: what the server acknowledged of each database (`acknowledged`);
      neither copy readable stops the start, one is a note;
    * ``.langgraph_ops.pckl`` (threads, runs, assistants) and the store's pickles:
      unpickled whole, against the checksum written after the data (`checked_pickles`): a
      class the data names that is gone (a module moved or renamed, a library upgrade), a
      truncated or damaged file, an empty file;
    * ``records.sqlite``: its ``-wal`` holds every committed frame, the database is whole
      (``PRAGMA quick_check``), every journaled record and store item unpickles, and it holds
      every write the marker says was acknowledged (`integrity.check_database`);
    * ``checkpoints.sqlite``: the same, its tables read;
    * the runtime's checkpoint pickles and retry counter, which this server never reads its
      data from (the checkpoints are in ``checkpoints.sqlite``; the runtime reads the pickles
      at a graceful stop, then rewrites them): damage is a note.
    """
    folder = (workdir or Path.cwd()) / PERSISTENCE_DIR
    notes: list[str] = []
    marker_path = folder / MARKER_NAME
    try:
        marker = read_marker(marker_path)
    except (OSError, MarkerError) as exc:
        raise StoredDataError(
            f"cannot start: {marker_path} (what the server acknowledged of each database) is damaged: {exc}. Nothing "
            "was changed. Without it the server cannot tell whether its databases hold every acknowledged write: "
            "restore it from a backup, or move it away to start without that check."
        ) from exc
    if marker is not None and marker.damaged_copies:
        notes.append(f"{marker_path}: one of its two copies is damaged; the other (at most one write older) was used")
    ops = _read_pickle(folder / OPS_NAME, "the threads, runs and assistants")
    for name in STORE_NAMES:
        _read_pickle(folder / name, "the long-term store")
    for name, holds, read in (
        (RECORDS_NAME, "the journal of thread records and store items", _read_journal_rows),
        (DATABASE_NAME, "the checkpoints", _read_checkpoint_tables),
    ):
        acknowledged = AcknowledgedMarks(marker.marks.get(name, {}), marker_path) if marker is not None else None
        notes += check_database(folder / name, holds, read, acknowledged)
    if ops is not None and not (isinstance(ops, dict) and isinstance(ops.get("threads", []), list)):
        raise StoredDataError(unreadable(folder / OPS_NAME, "the threads, runs and assistants", "not a dict of records"))
    for path in sorted(p for pattern in UNREAD_PICKLES for p in folder.glob(pattern)):
        try:
            _read_pickle(path, "not read by this server")
        except StoredDataError:
            notes.append(f"{path} cannot be read; this server never reads data from it, and rewrites it at a graceful stop")
    return StoredData(ops, notes)


def _read_pickle(path: Path, holds: str) -> Any:
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:  # unreadable: permissions, a folder in its place, an I/O error
        raise StoredDataError(unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc
    if not data:
        raise StoredDataError(unreadable(path, holds, "the file is empty (0 bytes)"))
    try:
        return load_checked(data)
    except DamagedPickle as exc:
        raise StoredDataError(damaged(path, holds, str(exc), acknowledged=False)) from exc
    except EOFError as exc:  # the unpickler's words when a file cut short ends at an opcode
        raise StoredDataError(unreadable(path, holds, f"EOFError: {exc} (the data was truncated)")) from exc
    except Exception as exc:  # any cause: each is named in the error, and the server stops
        raise StoredDataError(unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc


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
                    unreadable(path, holds, f"the record of thread {thread_id}: {type(exc).__name__}: {exc}")
                ) from exc
    if "store_items" in tables:
        for namespace, key, item in conn.execute("SELECT namespace, key, item FROM store_items"):
            try:
                json.loads(namespace)
                if item is not None:
                    pickle.loads(item)
            except Exception as exc:  # any cause: named in the error
                raise StoredDataError(
                    unreadable(path, holds, f"store item {namespace} {key!r}: {type(exc).__name__}: {exc}")
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
    from langgraph_runtime_inmem import _persistence, database  # type: ignore[import-untyped]  # the runtime ships no type info

    try:
        checked = read_stored_data()
    except StoredDataError as exc:
        _persistence._stores.clear()  # the runtime's 10 s flush would write the store's pickle back
        logging.getLogger(__name__).critical(str(exc))
        raise SystemExit(1) from None  # the line above is the whole story: no traceback of the server's import
    for note in checked.notes:
        logging.getLogger(__name__).warning("starting despite a damaged file: %s", note)
    ops = checked.ops
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
