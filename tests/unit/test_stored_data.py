"""The start-up check of stored files (server/persistence/stored_data.py, ``check_stored_data``), on files made here.

A real server refusing to start, with byte-identical files: tests/integration/test_stored_data_server.py.
Here, the causes a server folder can hold, each named in one error, and a healthy folder
read without changing a byte (a WAL database's ``-wal``/``-shm`` included).
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from server.persistence import StoredDataError, check_stored_data


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _healthy(folder: Path) -> tuple[Path, sqlite3.Connection]:
    """A server folder: records pickle, store pickle, a journal and a checkpoint database, both live in WAL mode."""
    api = folder / ".langgraph_api"
    api.mkdir(parents=True)
    (api / ".langgraph_ops.pckl").write_bytes(pickle.dumps({"threads": [], "runs": [], "assistants": []}, 2))
    (api / "store.pckl").write_bytes(pickle.dumps({("dev", "notes"): {}}, 2))
    journal = sqlite3.connect(api / "records.sqlite", isolation_level=None)
    journal.execute("PRAGMA journal_mode=WAL")
    journal.execute("CREATE TABLE threads (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, record BLOB NOT NULL)")
    journal.execute("INSERT INTO threads VALUES ('t', 1, ?)", (pickle.dumps(({"thread_id": "t"}, [pickle.dumps({})])),))
    checkpoints = sqlite3.connect(api / "checkpoints.sqlite")
    checkpoints.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    checkpoints.execute("CREATE TABLE writes (thread_id TEXT, value BLOB)")
    checkpoints.close()
    return api, journal  # the journal stays open: its -wal and -shm are on disk


def test_a_healthy_folder_is_read_without_changing_a_byte(tmp_path: Path) -> None:
    api, journal = _healthy(tmp_path)
    assert (api / "records.sqlite-wal").exists()
    before = _digests(api)
    assert check_stored_data(tmp_path) == {"threads": [], "runs": [], "assistants": []}
    assert _digests(api) == before
    journal.close()


def test_a_folder_without_data_is_fine(tmp_path: Path) -> None:
    assert check_stored_data(tmp_path) is None


def _empty(api: Path) -> str:
    (api / ".langgraph_ops.pckl").write_bytes(b"")
    return r"\.langgraph_ops\.pckl \(the threads, runs and assistants\) cannot be read: the file is empty"


def _store_truncated(api: Path) -> str:
    path = api / "store.pckl"
    path.write_bytes(path.read_bytes()[:-3])
    return r"store\.pckl \(the long-term store\) cannot be read: .*(EOFError|UnpicklingError)"


def _not_a_database(api: Path) -> str:
    (api / "checkpoints.sqlite").write_bytes(b"this is not a database" * 100)
    return r"checkpoints\.sqlite \(the checkpoints\) cannot be read: DatabaseError: file is not a database"


def _not_a_records_dict(api: Path) -> str:
    (api / ".langgraph_ops.pckl").write_bytes(pickle.dumps(["threads"]))
    return r"\.langgraph_ops\.pckl .* not a dict of records"


def _journal_row_unreadable(api: Path) -> str:
    with sqlite3.connect(api / "records.sqlite") as conn:
        conn.execute("INSERT INTO threads VALUES ('u', 2, ?)", (b"\x80\x04garbage",))
    conn.close()
    return r"records\.sqlite .*the record of thread u: UnpicklingError"


def _folder_in_its_place(api: Path) -> str:
    (api / "records.sqlite").unlink()
    (api / "records.sqlite").mkdir()
    return r"records\.sqlite .* cannot be read: IsADirectoryError"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(_folder_in_its_place, id="journal-replaced-by-a-folder"),
        pytest.param(_empty, id="records-pickle-empty"),
        pytest.param(_store_truncated, id="store-pickle-truncated"),
        pytest.param(_not_a_database, id="checkpoints-not-a-database"),
        pytest.param(_not_a_records_dict, id="records-pickle-of-another-shape"),
        pytest.param(_journal_row_unreadable, id="journal-row-damaged"),
    ],
)
def test_each_unreadable_file_is_named_with_its_cause(tmp_path: Path, damage: Callable[[Path], str]) -> None:
    api, journal = _healthy(tmp_path)
    journal.close()
    expected = damage(api)
    before = _digests(api)
    with pytest.raises(StoredDataError, match=expected) as refused:
        check_stored_data(tmp_path)
    assert str(refused.value).startswith(f"cannot start: {api}")
    assert "Nothing was changed" in str(refused.value)
    assert _digests(api) == before
