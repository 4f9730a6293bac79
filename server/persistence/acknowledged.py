"""What the server acknowledged, kept apart from the databases that hold it: ``.langgraph_api/acknowledged``.

SQLite drops a ``-wal`` frame whose checksum fails, and every frame after it, without a
word: a damaged ``-wal`` used to start the server with threads gone or missing their last
checkpoints. So each database also counts its own acknowledged writes, in the same commit
as the write (a table ``acknowledged``: one row per counter), and once the commit returns,
and before the server answers, the count goes to the marker file (`Acknowledged`). At
start-up `integrity` compares the two: a database whose counters are below the marker's
lost acknowledged writes, and the server does not start.

* ``records.sqlite``: triggers keep ``threads`` and ``store_items`` at the highest ``seq``
  journaled in each table (`mark_journal_table`); `thread_records` and `store_journal`
  give the seqs out and acknowledge them (a pickle of every record that makes journal rows
  obsolete moves ``threads`` to the seq it holds, in a commit after the one that deletes them).
* ``checkpoints.sqlite``: ``changes`` counts the rows the saver inserted or deleted, in SQL
  (temporary triggers); each commit on the server's connections reads the count it commits
  (`acknowledge_checkpoint_changes`), and the file takes it with the next record the server
  writes, which comes before the server answers for the checkpoints (a run's end, an update,
  a copy, a deletion all write the thread's record): no file write per checkpoint.

Why it is sound after a crash (SIGKILL): a counter reaches the marker only after the
commit that holds it returned, so the marker is never ahead of the database; a crash
between the two leaves the marker one write behind, never a false refusal. The marker is
two copies of one line (512 bytes each, written in turn with one ``pwrite``, each with its
CRC-32), so a torn write leaves the other copy, one write older; a line reads
``copy=N records.sqlite/threads=N records.sqlite/store_items=N checkpoints.sqlite/changes=N
crc32=X`` (`COUNTERS`). Not synced: like the record journal, it survives the process, not
a power cut (after which a refusal means the journal did lose acknowledged writes).
"""

from __future__ import annotations

import os
import re
import threading
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER_NAME = "acknowledged"
"""The marker file inside ``.langgraph_api/``: two copies of one line."""

COPY_SIZE = 512
"""Bytes per copy of the marker (its line padded with spaces): written with one ``pwrite``."""

MARKS_TABLE = "CREATE TABLE IF NOT EXISTS acknowledged (name TEXT PRIMARY KEY, mark INTEGER NOT NULL)"
"""The counters a database keeps of its own acknowledged writes, one row per counter."""

CHANGES = "changes"
"""The checkpoint database's counter: rows the saver inserted or deleted."""

COUNTERS = (("records.sqlite", "threads"), ("records.sqlite", "store_items"), ("checkpoints.sqlite", CHANGES))
"""Every counter the marker holds (database file, counter), in the order of its line."""

_LINE = "copy=%d " + " ".join(f"{db}/{name}=%d" for db, name in COUNTERS)
_COPY = re.compile(
    rb"copy=(\d+) "
    + b" ".join(re.escape(f"{db}/{name}=".encode()) + rb"(\d+)" for db, name in COUNTERS)
    + rb" crc32=([0-9a-f]{8}) *\n"
)


class MarkerError(ValueError):
    """Neither copy of the marker file can be read."""


@dataclass(frozen=True)
class Marker:
    """The marker file, read: the newest readable copy."""

    marks: dict[str, dict[str, int]]
    """database file name -> counter -> the highest value acknowledged."""
    serial: int = 0
    """How many times the marker was written (the newer copy has the higher one)."""
    damaged_copies: int = 0
    """Copies that could not be read (at most one: with none readable, `read_marker` raises)."""


def _copy_bytes(serial: int, values: tuple[int, ...]) -> bytes:
    """One copy of the marker, ``values`` in the order of `COUNTERS` (a format string: this runs on every write)."""
    body = (_LINE % (serial, *values)).encode()
    return (b"%s crc32=%08x" % (body, zlib.crc32(body))).ljust(COPY_SIZE - 1) + b"\n"


def _read_copy(raw: bytes) -> tuple[int, tuple[int, ...]] | None:
    found = _COPY.fullmatch(raw)
    if found is None or len(raw) != COPY_SIZE:
        return None
    serial, *values = (int(group) for group in found.groups()[:-1])
    if _copy_bytes(serial, tuple(values)) != raw:  # the checksum, and nothing else changed
        return None
    return serial, tuple(values)


def read_marker(path: Path) -> Marker | None:
    """The marker at ``path`` (None when there is none); `MarkerError` when no copy of it can be read."""
    if not path.exists():
        return None
    data = path.read_bytes()
    copies = [_read_copy(data[offset : offset + COPY_SIZE]) for offset in (0, COPY_SIZE)]
    readable = [c for c in copies if c is not None]
    if not readable:
        raise MarkerError(f"neither of its two copies can be read ({len(data)} bytes, {2 * COPY_SIZE} expected)")
    serial, values = max(readable, key=lambda copy: copy[0])
    marks: dict[str, dict[str, int]] = {}
    for (db, name), value in zip(COUNTERS, values, strict=True):
        marks.setdefault(db, {})[name] = value
    return Marker(marks, serial, len(copies) - len(readable))


@dataclass
class Acknowledged:
    """The marker file's writer: `acknowledge` raises a counter once the commit that holds it returned."""

    path: Path
    values: list[int] = field(default_factory=lambda: [0] * len(COUNTERS))
    """The counters, in the order of `COUNTERS`."""
    serial: int = 0
    _fd: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _unwritten: bool = False
    """A count was raised since the file was last written."""

    @classmethod
    def open(cls, path: Path) -> Acknowledged:
        """The writer of the marker at ``path``, counting on from what it holds (the start-up check read it)."""
        try:
            marker = read_marker(path)
        except MarkerError:
            marker = None  # the check let the server start: it is rewritten whole below
        if marker is None:
            return cls(path)
        return cls(path, [marker.marks[db][name] for db, name in COUNTERS], marker.serial)

    def acknowledge(self, database: str, counter: str, mark: int, *, write: bool = True) -> None:
        """Record that ``database`` holds ``counter`` up to ``mark``, committed; called before the server answers.

        ``write=False`` keeps it for the next write of the file (the checkpoints' count: a run's
        checkpoints are answered for when its record is written, which writes the file).
        """
        position = COUNTERS.index((database, counter))
        with self._lock:
            if mark > self.values[position]:
                self.values[position] = mark
                self._unwritten = True
            if not (write and self._unwritten):
                return
            self._unwritten = False
            self.serial += 1
            data = _copy_bytes(self.serial, tuple(self.values))
            if self._fd is None:  # the first write of this process: both copies, whatever they held
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                os.pwrite(self._fd, data, (self.serial + 1) % 2 * COPY_SIZE)
                os.ftruncate(self._fd, 2 * COPY_SIZE)
            os.pwrite(self._fd, data, self.serial % 2 * COPY_SIZE)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


_OPEN: dict[Path, Acknowledged] = {}
_OPEN_LOCK = threading.Lock()


def acknowledged_in(folder: Path) -> Acknowledged:
    """The process's writer of the marker in ``folder`` (``.langgraph_api/``): one per folder, shared by every connection."""
    path = (folder / MARKER_NAME).absolute()
    with _OPEN_LOCK:
        if path not in _OPEN:
            _OPEN[path] = Acknowledged.open(path)
        return _OPEN[path]


def read_marks(conn: Any) -> dict[str, int]:
    """A database's own counters (sqlite3 connection); none when it has no ``acknowledged`` table."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "acknowledged" not in tables:
        return {}
    return {str(name): int(mark) for name, mark in conn.execute("SELECT name, mark FROM acknowledged")}


async def mark_journal_table(journal: Any, table: str) -> int:
    """Keep ``table``'s counter in ``records.sqlite`` at its highest ``seq``, in the writing transaction; its value.

    ``journal``: the aiosqlite connection (autocommit). Triggers, so a row and its counter
    commit together at no extra statement; the counter never goes down (rows are deleted
    once a pickle holds them). Starts at the table's highest ``seq``.
    """
    statements = [
        MARKS_TABLE,
        f"INSERT OR IGNORE INTO acknowledged (name, mark) VALUES ('{table}', 0)",
        # Only when it is behind (rows of a journal older than its count): a write that changes nothing
        # would still add a frame, and a reader of the -wal (a playbook copy) would then write its -shm.
        f"UPDATE acknowledged SET mark = (SELECT max(seq) FROM {table}) "
        f"WHERE name = '{table}' AND mark < (SELECT coalesce(max(seq), 0) FROM {table})",
    ]
    for event in ("INSERT", "UPDATE OF seq"):
        statements.append(
            f"CREATE TRIGGER IF NOT EXISTS {table}_acknowledged_{event.split()[0].lower()} AFTER {event} ON {table} "
            f"BEGIN UPDATE acknowledged SET mark = max(mark, NEW.seq) WHERE name = '{table}'; END"
        )
    for statement in statements:
        async with journal.execute(statement):
            pass
    async with journal.execute("SELECT mark FROM acknowledged WHERE name = ?", (table,)) as cursor:
        row = await cursor.fetchone()
    return int(row[0])


async def acknowledge_checkpoint_changes(conn: Any, database: str, acknowledged: Acknowledged) -> None:
    """Count every row the saver writes or deletes through ``conn`` (its aiosqlite connection) in ``changes``, in the
    writing transaction, and acknowledge the count once the saver's commit returned.

    Temporary triggers (this connection's only: the file itself gains one table) add one per
    row of ``checkpoints`` and ``writes`` inserted or deleted, in SQL (no call into Python per
    row). The saver ends every write with ``conn.commit()``, which is patched to read the
    count in the transaction and commit it, on the connection's thread in one go, then hand it
    to the marker before the saver's method returns (the file takes it with the next record).
    """
    async with conn.execute(MARKS_TABLE):
        pass
    async with conn.execute(f"INSERT OR IGNORE INTO acknowledged (name, mark) VALUES ('{CHANGES}', 0)"):
        pass
    await conn.commit()
    for table in ("checkpoints", "writes"):
        for event in ("INSERT", "DELETE"):
            statement = (
                f"CREATE TEMP TRIGGER IF NOT EXISTS {table}_{event.lower()}_acknowledged AFTER {event} ON main.{table} "
                f"BEGIN UPDATE acknowledged SET mark = mark + 1 WHERE name = '{CHANGES}'; END"
            )
            async with conn.execute(statement):
                pass
    conn.commit = _acknowledging_commit(conn, conn.commit, database, acknowledged)


def _count_and_commit(raw: Any) -> int | None:
    """On the connection's thread: the count as this transaction leaves it, then the commit."""
    row = raw.execute(f"SELECT mark FROM acknowledged WHERE name = '{CHANGES}'").fetchone()
    raw.commit()
    return None if row is None else int(row[0])


def _acknowledging_commit(
    conn: Any, commit: Callable[[], Awaitable[None]], database: str, acknowledged: Acknowledged
) -> Callable[[], Awaitable[None]]:
    async def acknowledging_commit() -> None:
        if not conn.in_transaction:
            await commit()
            return
        run_on_its_thread = getattr(conn, "_execute", None)  # aiosqlite's: one hop for the read and the commit
        if run_on_its_thread is not None:
            mark = await run_on_its_thread(_count_and_commit, conn._conn)
        else:  # another aiosqlite: two
            rows = await conn.execute_fetchall(f"SELECT mark FROM acknowledged WHERE name = '{CHANGES}'")
            await commit()
            mark = int(rows[0][0]) if rows else None
        if mark is not None:  # written to the file with the next record: before the server answers for the run
            acknowledged.acknowledge(database, CHANGES, mark, write=False)

    return acknowledging_commit
