"""The server refuses to start when a stored file cannot be read: the runtime would delete it and start empty.

`check_stored_data` reads every file in ``.langgraph_api/`` as the server will, without
writing anything, and raises `StoredDataError` naming the first file it cannot read and
why. `refuse_to_start_on_unreadable_data`, which server/webapp.py calls when the server
imports it, runs the check before the runtime loads any file, and hands the records it
read to the runtime.
"""

from __future__ import annotations

import functools
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.persistence.files import DATABASE_NAME, OPS_NAME, PERSISTENCE_DIR, RECORDS_NAME, STORE_NAMES


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
    from langgraph_runtime_inmem import _persistence, database  # type: ignore[import-untyped]  # the runtime ships no type info

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
