"""The one copy of a live persistence folder every side of a proof starts from (`live_copy.snapshot`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from migrations_playbook.staging.live_copy import snapshot


def _live_folder(root: Path) -> tuple[Path, sqlite3.Connection]:
    data = root / ".langgraph_api"
    data.mkdir(parents=True)
    (data / ".langgraph_ops.pckl").write_bytes(b"ops")
    writer = sqlite3.connect(data / "checkpoints.sqlite")
    writer.execute("pragma journal_mode=wal")
    writer.execute("pragma wal_autocheckpoint=0")  # the rows stay in the -wal file, as on a busy live server
    writer.execute("create table checkpoints (thread_id text)")
    writer.executemany("insert into checkpoints values (?)", [(f"t{n}",) for n in range(50)])
    writer.commit()
    return root, writer


def test_the_snapshot_holds_what_the_live_writer_committed_and_the_live_folder_is_untouched(tmp_path: Path) -> None:
    live, writer = _live_folder(tmp_path / "live")
    before = sorted(p.name for p in (live / ".langgraph_api").iterdir())
    with snapshot(live) as frozen:
        assert (frozen / ".langgraph_ops.pckl").read_bytes() == b"ops"
        assert not (frozen / "checkpoints.sqlite-wal").exists()  # one self-contained file: sides copy it as is
        copy = sqlite3.connect(frozen / "checkpoints.sqlite")
        assert copy.execute("select count(*) from checkpoints").fetchone() == (50,)
        copy.close()
        writer.execute("insert into checkpoints values ('later')")  # the live server moves on: the snapshot does not
        writer.commit()
        copy = sqlite3.connect(frozen / "checkpoints.sqlite")
        assert copy.execute("select count(*) from checkpoints").fetchone() == (50,)
        copy.close()
    assert not frozen.exists()
    assert sorted(p.name for p in (live / ".langgraph_api").iterdir()) == before
    writer.close()


def test_a_folder_without_persistence_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no langgraph dev persistence"), snapshot(tmp_path):
        pass
