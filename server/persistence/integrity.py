"""Whether a SQLite database of the server holds every write it acknowledged, checked before anything opens it.

SQLite recovers a ``-wal`` by reading its frames in order and keeping those up to the
last commit whose checksums hold: from a damaged frame on, every committed write is
dropped without a word (a ``-wal`` overwritten with garbage: every thread a 404). And the
first connection to open the database writes that loss in for good. So `check_database`
reads the files itself, and opens only a copy:

* the ``-wal``'s header (magic, version, page size, checksum) and the wal-index header
  in ``-shm``, which SQLite writes after each commit, apart from the ``-wal``: how many
  frames were committed, in which generation (salts), how many are already copied into
  the database. A ``-wal`` from which SQLite recovers fewer frames than that, or a
  ``-wal`` missing or emptied with frames not yet copied, lost committed writes;
* on a copy of the database and its ``-wal``: SQLite's recovery (``PRAGMA
  wal_checkpoint``: the frames it keeps), ``PRAGMA quick_check``, every row read by the
  caller, and the database's own counters of acknowledged writes, which must reach
  those of the marker file (`acknowledged`): below them, acknowledged writes are gone;
* the database file's own header, which a ``-wal`` holding page 1 hides from SQLite.

A ``-shm`` that cannot be read costs nothing (SQLite rebuilds it from the ``-wal``): the
``-wal`` is then checked against the marker alone, and the start says so (a note).
Not detected: a damaged page of the database file that held only the end of a large
value (the last page of an overflow chain) and no page structure; and a ``-wal`` damaged
only after its last acknowledged commit (nothing acknowledged is lost).
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.persistence.acknowledged import MARKER_NAME, read_marks

WAL_MAGIC = (0x377F0682, 0x377F0683)
"""A ``-wal`` header's first four bytes (big-endian); the low bit: checksums of big-endian words."""
WAL_VERSION = 3007000
WAL_HEADER_SIZE = 32
FRAME_HEADER_SIZE = 24
SHM_HEADER_SIZE = 136
"""Two copies of the 48-byte wal-index header, then the checkpoint information (``nBackfill`` first)."""
SQLITE_MAGIC = b"SQLite format 3\x00"


class StoredDataError(RuntimeError):
    """A file the server keeps its data in cannot be read, or lost what it held: the server does not start."""


def unreadable(path: Path, holds: str, cause: str) -> str:
    """The refusal of a file the server cannot read."""
    return (
        f"cannot start: {path} ({holds}) cannot be read: {cause}. Nothing was changed. Restore the file from a "
        f"backup, or install the code and libraries that wrote it; move it away only to start without its data."
    )


def damaged(path: Path, holds: str, cause: str, *, acknowledged: bool = True) -> str:
    """The refusal of a file that does not hold what the server wrote to it (``acknowledged``: a database's file,
    whose writes the marker file counts)."""
    marker = f" (and {path.parent / MARKER_NAME}, which says what was acknowledged)" if acknowledged else ""
    return (
        f"cannot start: {path} ({holds}) is damaged: {cause}. Nothing was changed. Restore the folder from a backup; "
        f"to start with what is left, move the damaged file away{marker}."
    )


@dataclass(frozen=True)
class WalIndex:
    """The wal-index header SQLite keeps in ``-shm``: the ``-wal`` as of its last commit."""

    frames: int
    """Frames committed to the ``-wal`` (``mxFrame``)."""
    backfilled: int
    """Of those, the frames already copied into the database file (``nBackfill``)."""
    salts: bytes
    """The generation of the ``-wal`` they were committed to (its header's bytes 16-23)."""


def _checksum(data: bytes, byteorder: str) -> tuple[int, int]:
    """SQLite's WAL checksum (``walChecksumBytes``) of ``data``, read as 32-bit words in ``byteorder``."""
    words = struct.unpack(f"{'>' if byteorder == 'big' else '<'}{len(data) // 4}I", data)
    s1 = s2 = 0
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2


def read_wal_index(shm: Path) -> tuple[WalIndex | None, str | None]:
    """``-shm``'s wal-index header, or None and why it cannot be used (None, None: there is no ``-shm``)."""
    import sys

    try:
        data = shm.read_bytes()[:SHM_HEADER_SIZE]
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if len(data) < SHM_HEADER_SIZE:
        return None, f"it is {len(data)} bytes, shorter than its header"
    header = data[:48]
    version, _, _, is_init, _, _, frames = struct.unpack("=IIIBBHI", header[:20])
    if version != WAL_VERSION or is_init != 1 or _checksum(header[:40], sys.byteorder) != struct.unpack("=II", header[40:48]):
        return None, "its header is not a wal-index header (version, flag or checksum)"
    if header != data[48:96]:  # also what a crash between SQLite's two copies leaves
        return None, "the two copies of its header differ"
    (backfilled,) = struct.unpack("=I", data[96:100])
    return WalIndex(frames, backfilled, header[32:40]), None


def read_wal_header(wal: Path, holds: str) -> bytes | None:
    """The ``-wal``'s 32-byte header (None: no ``-wal``, or an empty one); `StoredDataError` when it is not one."""
    try:
        with wal.open("rb") as file:
            header = file.read(WAL_HEADER_SIZE)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoredDataError(unreadable(wal, holds, f"{type(exc).__name__}: {exc}")) from exc
    if not header:
        return None
    if len(header) < WAL_HEADER_SIZE:
        raise StoredDataError(damaged(wal, holds, f"it is {len(header)} bytes, shorter than a WAL header"))
    magic, version, page_size = struct.unpack(">III", header[:12])
    if magic not in WAL_MAGIC:
        raise StoredDataError(damaged(wal, holds, f"it does not start as a WAL file (magic {magic:08x})"))
    valid_size = 512 <= page_size <= 65536 and page_size & (page_size - 1) == 0
    byteorder = "big" if magic & 1 else "little"
    if version != WAL_VERSION or not valid_size or _checksum(header[:24], byteorder) != struct.unpack(">II", header[24:]):
        raise StoredDataError(damaged(wal, holds, "its header does not match its checksum (version, page size or salts)"))
    return header


def check_database_header(path: Path, holds: str) -> None:
    """The database file's own header and size, which SQLite does not read when the ``-wal`` holds page 1."""
    with path.open("rb") as file:
        header = file.read(100)
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        raise StoredDataError(damaged(path, holds, "its first page is not a SQLite header"))
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    size = path.stat().st_size
    if size % page_size:
        raise StoredDataError(damaged(path, holds, f"its {size} bytes are not a whole number of {page_size}-byte pages"))


def _committed_frames(wal: Path, header: bytes, index: WalIndex, recovered: int, holds: str) -> None:
    """`StoredDataError` when SQLite recovers fewer frames from ``wal`` than its index says were committed."""
    shm = wal.with_name(wal.name.removesuffix("-wal") + "-shm")
    if header[16:24] != index.salts:
        raise StoredDataError(
            damaged(wal, holds, f"its header is not the one of the {index.frames} frames {shm.name} says were committed")
        )
    if recovered >= index.frames:
        return
    (page_size,) = struct.unpack(">I", header[8:12])
    needed = WAL_HEADER_SIZE + index.frames * (FRAME_HEADER_SIZE + page_size)
    size = wal.stat().st_size
    where = f"it is cut short ({size} bytes of the {needed} they take)" if size < needed else "a frame fails its checksum"
    raise StoredDataError(
        damaged(
            wal,
            holds,
            f"{where}: SQLite would keep {recovered} of the {index.frames} frames committed to it "
            f"({shm.name} counts them) and drop the rest without a word",
        )
    )


@dataclass(frozen=True)
class AcknowledgedMarks:
    """What the marker file says was acknowledged of one database (counter -> value), and where it says so."""

    marks: dict[str, int]
    marker: Path


def check_database(
    path: Path, holds: str, read: Callable[[Any, Path, str], None], acknowledged: AcknowledgedMarks | None
) -> list[str]:
    """Check a database and its ``-wal``/``-shm`` without writing a byte; the notes of what the start works around.

    `StoredDataError` names the first file that cannot be read or lost committed or
    acknowledged writes. ``read``: reads every row of the copy as the server will.
    """
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    index, unusable = read_wal_index(shm)
    expected = {k: v for k, v in (acknowledged.marks if acknowledged else {}).items() if v > 0}
    if not path.exists():
        if wal.exists() and wal.stat().st_size > 0:
            raise StoredDataError(damaged(path, holds, f"the file is missing, and its {wal.name} is there"))
        if expected:
            raise StoredDataError(damaged(path, holds, "the file is missing, and the server acknowledged writes to it"))
        return []
    if path.is_file() and path.stat().st_size == 0:
        raise StoredDataError(unreadable(path, holds, "the file is empty (0 bytes)"))
    header = read_wal_header(wal, holds)
    if header is None and index is not None and index.backfilled < index.frames:
        state = "empty" if wal.exists() else "missing"
        raise StoredDataError(
            damaged(
                wal,
                holds,
                f"it is {state}, and {shm.name} says {index.frames} frames were committed to it, "
                f"{index.frames - index.backfilled} of them not yet copied into the database",
            )
        )

    def all_committed(recovered: int) -> None:
        if header is not None and index is not None and index.frames > 0:
            _committed_frames(wal, header, index, recovered, holds)

    marks = _read_a_copy(path, header is not None, holds, all_committed, read)
    check_database_header(path, holds)
    marker = acknowledged.marker.name if acknowledged is not None else MARKER_NAME
    for counter, value in sorted(expected.items()):
        if marks.get(counter, 0) < value:
            raise StoredDataError(
                damaged(
                    path,
                    holds,
                    f"it lost writes the server acknowledged: it holds {counter} up to {marks.get(counter, 0)}, and "
                    f"{marker} says up to {value} were acknowledged (its {wal.name} or its pages lost them)",
                )
            )
    if header is None or unusable is None:
        return []
    if not expected:
        checked = f"which could not be checked ({marker} names no acknowledged write of it)"
    else:
        checked = f"which was checked against {marker} instead: every acknowledged write is there"
    return [f"{shm} (SQLite's index of {wal.name}) cannot be read ({unusable}); SQLite rebuilds it from {wal.name}, {checked}"]


def _read_a_copy(
    path: Path, with_wal: bool, holds: str, recovered: Callable[[int], None], read: Callable[[Any, Path, str], None]
) -> dict[str, int]:
    """Open a copy of the database (and ``-wal``): the frames SQLite recovers (handed to ``recovered`` first, so that
    a damaged ``-wal`` is named before the database it leaves inconsistent), quick_check, every row; the counters.

    A copy: an open connection to a WAL database writes its ``-shm``, and the last one to
    close checkpoints the ``-wal`` into the database (and a damaged one's loss with it).
    """
    with tempfile.TemporaryDirectory(prefix="stored-data-check-") as scratch:
        copy_path = Path(scratch) / path.name
        try:
            shutil.copyfile(path, copy_path)
            if with_wal:
                shutil.copyfile(path.with_name(path.name + "-wal"), copy_path.with_name(copy_path.name + "-wal"))
        except OSError as exc:  # unreadable: permissions, a folder in its place, an I/O error
            raise StoredDataError(unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc
        try:
            conn = sqlite3.connect(copy_path)
            try:
                recovered(max(int(conn.execute("PRAGMA wal_checkpoint").fetchone()[1]), 0))
                problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:  # SQLite's lines, on one line: the refusal is one line
                    lines = (" ".join(problem.replace("*** in database main ***", "").split()) for problem in problems[:3])
                    found = "; ".join(lines)
                    raise StoredDataError(unreadable(path, holds, f"the database is damaged: {found}"))
                read(conn, path, holds)
                return read_marks(conn)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StoredDataError(unreadable(path, holds, f"{type(exc).__name__}: {exc}")) from exc
