"""The start-up check of damaged files (server/persistence/integrity.py, acknowledged.py, checked_pickles.py).

Issue 37, item 4: SQLite drops every ``-wal`` frame from the first whose checksum fails, so
a ``-wal`` overwritten after a crash started the server with every thread gone, and a
damaged checkpoint ``-wal`` brought threads back without their messages or their pending
approval. Here, without a server: a folder written by the stand-in writer of
test_integrity_crashes.py (the server's write paths, no HTTP) and killed with SIGKILL;
each file damaged in each way on a copy; the check must refuse naming the file and change
nothing, or let the server start with every row and pickle exactly as written (and say
what it worked around). That a SIGKILL at any moment leaves files the check accepts:
test_integrity_crashes.py. A real server refusing and starting:
tests/integration/test_damaged_files_server.py.
"""

from __future__ import annotations

import hashlib
import pickle
import random
import shutil
import sqlite3
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.persistence import StoredDataError, read_stored_data
from server.persistence.acknowledged import (
    COPY_SIZE,
    MARKER_NAME,
    Acknowledged,
    MarkerError,
    read_marker,
)
from server.persistence.checked_pickles import DamagedPickle, load_checked, with_checksum
from tests.unit.test_integrity_crashes import kill_after, start_writer

API = ".langgraph_api"
DATABASES = ("records.sqlite", "checkpoints.sqlite")


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Written, stopped gracefully (the databases' own files hold data), written again, killed."""
    folder = tmp_path_factory.mktemp("killed")
    assert start_writer(folder, "30").wait(timeout=120) == 0
    kill_after(folder, 25)
    api = folder / API
    assert all((api / f"{name}-wal").stat().st_size > 0 for name in DATABASES), "the kill left both -wal files"
    return folder


@pytest.fixture
def copy(killed: Path, tmp_path: Path) -> Path:
    shutil.copytree(killed / API, tmp_path / API)
    return tmp_path


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / API).iterdir())}


def _contents(folder: Path, scratch: Path) -> dict[str, Any]:
    """What the server reads from a folder: every row SQLite gives (from a copy, as the check reads), the pickle."""
    found: dict[str, Any] = {".langgraph_ops.pckl": (folder / API / ".langgraph_ops.pckl").read_bytes()}
    for name in DATABASES:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        for suffix in ("", "-wal"):
            shutil.copyfile(folder / API / f"{name}{suffix}", scratch / f"{name}{suffix}")
        conn = sqlite3.connect(scratch / name)
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        found[name] = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
        conn.close()
    return found


# -- each file, each damage -----------------------------------------------------------------------


def _truncate(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(path.name).randbytes(path.stat().st_size))


def _torn_page(fill: Callable[[int], bytes]) -> Callable[[Path], None]:
    """A 4096-byte page in the middle of the file overwritten (all of a file smaller than a page)."""

    def tear(path: Path) -> None:
        size = path.stat().st_size
        offset = size // 2 // 4096 * 4096
        with path.open("r+b") as file:
            file.seek(offset)
            file.write(fill(min(4096, size - offset)))

    return tear


DAMAGES = {
    "truncated": _truncate,
    "garbage": _garbage,
    "torn-page-zeros": _torn_page(bytes),
    "torn-page-garbage": _torn_page(random.Random(7).randbytes),
}
FILES = {
    "records.sqlite-wal": "refuses",
    "checkpoints.sqlite-wal": "refuses",
    ".langgraph_ops.pckl": "refuses",
    "records.sqlite": "refuses or starts exactly",
    "checkpoints.sqlite": "refuses or starts exactly",
    "records.sqlite-shm": "starts exactly",
    "checkpoints.sqlite-shm": "starts exactly",
    MARKER_NAME: "refuses or starts exactly",
}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", FILES)
def test_a_damaged_file_stops_the_start_naming_it_or_nothing_is_lost(copy: Path, name: str, damage: str) -> None:
    intact = _contents(copy, copy / "scratch")
    DAMAGES[damage](copy / API / name)
    before = _digests(copy)
    try:
        started = read_stored_data(copy)
    except StoredDataError as refused:
        assert FILES[name] != "starts exactly", str(refused)
        assert str(refused).startswith(f"cannot start: {copy / API / name} ("), str(refused)
        assert "\n" not in str(refused) and "Nothing was changed" in str(refused)
    else:
        assert FILES[name] != "refuses", f"{name} {damage}: started with {started.notes}"
        assert _contents(copy, copy / "scratch") == intact, "every row and record as written"
    assert _digests(copy) == before, "the check changed nothing"


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_wal_overwritten_after_a_crash_is_named_with_what_sqlite_would_drop(copy: Path, damage: str) -> None:
    DAMAGES[damage](copy / API / "records.sqlite-wal")
    with pytest.raises(StoredDataError) as refused:
        read_stored_data(copy)
    cause = str(refused.value).split(" is damaged: ")[1]
    assert cause.startswith(("it does not start as a WAL file", "it is cut short", "a frame fails its checksum")), cause


def test_the_killed_folder_starts_as_it_is(killed: Path) -> None:
    before = _digests(killed)
    assert read_stored_data(killed).notes == []
    assert _digests(killed) == before


# -- the marker, where SQLite's own index of the -wal is gone ------------------------------------


def _commit_ends(wal: Path) -> list[int]:
    """The byte offsets just after each commit frame of a ``-wal`` (its frames' headers, checksums not checked)."""
    data = wal.read_bytes()
    (page_size,) = struct.unpack(">I", data[8:12])
    frame, ends = 24 + page_size, []
    for offset in range(32, len(data) - frame + 1, frame):
        if struct.unpack(">I", data[offset + 4 : offset + 8])[0]:  # the database size: set on a commit frame
            ends.append(offset + frame)
    return ends


@pytest.mark.parametrize("name", DATABASES)
def test_a_wal_cut_at_an_earlier_commit_with_its_index_gone_is_caught_by_the_marker(copy: Path, name: str) -> None:
    wal = copy / API / f"{name}-wal"
    (copy / API / f"{name}-shm").unlink()  # nothing of SQLite's says how many frames were committed
    with wal.open("r+b") as file:
        file.truncate(_commit_ends(wal)[-3])  # a -wal that looks whole, two commits short
    with pytest.raises(StoredDataError, match="it lost writes the server acknowledged: it holds") as refused:
        read_stored_data(copy)
    assert str(refused.value).startswith(f"cannot start: {copy / API / name} (")


def test_a_damaged_wal_and_a_damaged_index_are_still_caught(copy: Path) -> None:
    _garbage(copy / API / "checkpoints.sqlite-shm")
    _torn_page(bytes)(copy / API / "checkpoints.sqlite-wal")
    with pytest.raises(StoredDataError, match=r"checkpoints\.sqlite .*it lost writes the server acknowledged"):
        read_stored_data(copy)


def test_a_damaged_index_alone_starts_and_says_so(copy: Path) -> None:
    _garbage(copy / API / "records.sqlite-shm")
    (note,) = read_stored_data(copy).notes
    assert note.startswith(f"{copy / API / 'records.sqlite-shm'} (SQLite's index of records.sqlite-wal) cannot be read")
    assert "checked against acknowledged instead: every acknowledged write is there" in note


def test_a_database_older_than_what_was_acknowledged_is_refused(copy: Path, tmp_path: Path) -> None:
    older = tmp_path / "older"
    shutil.copytree(copy / API, older / API)
    kill_after(copy, 3)  # the same folder written on
    for suffix in ("", "-wal", "-shm"):  # checkpoints.sqlite as it was before, as if restored from a backup
        shutil.copyfile(older / API / f"checkpoints.sqlite{suffix}", copy / API / f"checkpoints.sqlite{suffix}")
    with pytest.raises(StoredDataError, match=r"checkpoints\.sqlite .*it lost writes the server acknowledged"):
        read_stored_data(copy)


def test_a_missing_database_a_wal_without_its_database_and_a_missing_wal_are_refused(copy: Path) -> None:
    api = copy / API
    (api / "records.sqlite").unlink()
    with pytest.raises(StoredDataError, match=r"records\.sqlite .* the file is missing, and its records.sqlite-wal is there"):
        read_stored_data(copy)
    for suffix in ("-wal", "-shm"):
        (api / f"records.sqlite{suffix}").unlink()
    with pytest.raises(StoredDataError, match="the file is missing, and the server acknowledged writes to it"):
        read_stored_data(copy)
    (api / "checkpoints.sqlite-wal").unlink()
    (api / MARKER_NAME).unlink()  # without the marker, SQLite's index still says what the -wal held
    (api / "records.sqlite-shm").touch()
    with pytest.raises(StoredDataError, match=r"checkpoints\.sqlite-wal .* it is missing, and checkpoints.sqlite-shm says"):
        read_stored_data(copy)


# -- no false refusal ------------------------------------------------------------------------------


# -- the marker file -------------------------------------------------------------------------------


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Acknowledged]:
    writer = Acknowledged(tmp_path / MARKER_NAME)
    yield writer
    writer.close()


def test_the_marker_keeps_the_highest_count_and_counts_on_after_a_restart(marker: Acknowledged) -> None:
    marker.acknowledge("records.sqlite", "threads", 5)
    marker.acknowledge("records.sqlite", "threads", 3)  # a late answer of an earlier write
    marker.acknowledge("checkpoints.sqlite", "changes", 9, write=False)  # a checkpoint: written with the next record
    read = read_marker(marker.path)
    assert read is not None and read.marks["checkpoints.sqlite"] == {"changes": 0}
    marker.acknowledge("records.sqlite", "threads", 6)
    read = read_marker(marker.path)
    assert read is not None
    assert read.marks == {"records.sqlite": {"threads": 6, "store_items": 0}, "checkpoints.sqlite": {"changes": 9}}
    marker.close()
    again = Acknowledged.open(marker.path)
    again.acknowledge("records.sqlite", "store_items", 1)
    assert read_marker(marker.path) == type(read)(
        {"records.sqlite": {"threads": 6, "store_items": 1}, "checkpoints.sqlite": {"changes": 9}}, serial=3
    )
    again.close()


def test_one_damaged_copy_of_the_marker_leaves_the_other_and_two_stop_the_start(marker: Acknowledged) -> None:
    for value in (1, 2, 3):
        marker.acknowledge("records.sqlite", "threads", value)
    data = bytearray(marker.path.read_bytes())
    newer = 3 % 2 * COPY_SIZE
    data[newer + 10] ^= 0xFF
    marker.path.write_bytes(bytes(data))
    read = read_marker(marker.path)
    assert read is not None and read.marks["records.sqlite"]["threads"] == 2 and read.damaged_copies == 1
    data[(newer + COPY_SIZE) % (2 * COPY_SIZE)] ^= 0xFF
    marker.path.write_bytes(bytes(data))
    with pytest.raises(MarkerError, match="neither of its two copies can be read"):
        read_marker(marker.path)


# -- pickles ---------------------------------------------------------------------------------------


def test_a_zeroed_page_inside_a_long_value_passes_the_unpickler_but_not_the_checksum() -> None:
    records = {"threads": [{"values": {"messages": ["turn " * 2000]}}]}
    data = bytearray(with_checksum(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)))
    data[4096:8192] = bytes(4096)
    assert pickle.loads(bytes(data)) != records, "the unpickler alone takes it"
    with pytest.raises(DamagedPickle, match="do not match the checksum written with them"):
        load_checked(bytes(data))


def test_a_pickle_without_a_checksum_is_read_as_it_is_and_must_end_with_its_data() -> None:
    plain = pickle.dumps({"threads": []}, 2)  # as the runtime and the playbook's staging copy write it
    assert load_checked(plain) == {"threads": []}
    assert load_checked(with_checksum(plain)) == {"threads": []}
    with pytest.raises(DamagedPickle, match="bytes follow the pickled data that are not its checksum line"):
        load_checked(with_checksum(plain)[:-4])
