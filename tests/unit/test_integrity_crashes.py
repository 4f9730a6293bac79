"""A SIGKILL at any moment leaves files the start-up check accepts; and the stand-in writer the integrity tests kill.

Run as ``python -m tests.unit.test_integrity_crashes FOLDER [ROUNDS]``, this module keeps
writing to ``FOLDER/.langgraph_api/`` as `dev_checkpointer` does: thread records journaled
and acknowledged (server/persistence/thread_records.py), now and then a pickle of every
record, store items (store_journal.py), checkpoints and their writes through
langgraph-checkpoint-sqlite's ``AsyncSqliteSaver`` with every change counted
(acknowledged.py), and threads' checkpoints deleted. It prints ``ready`` once it started
(as the server would: the journal laid over the pickle, the pickle rewritten), then
``written N`` after each round, until it is killed (or, after ROUNDS rounds, closes its
databases as a graceful stop does). Started again on the same folder, it counts on from
what is there. No server, no sockets: the unit lane runs it. The damaged files themselves:
test_integrity.py; on a real server: tests/integration/test_damaged_files_server.py.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from server.persistence import read_stored_data
from server.persistence.acknowledged import (
    COUNTERS,
    MARKER_NAME,
    Acknowledged,
    acknowledge_checkpoint_changes,
    acknowledged_in,
    mark_journal_table,
    read_marker,
)
from server.persistence.checked_pickles import load_checked
from server.persistence.files import DATABASE_NAME, OPS_NAME, PERSISTENCE_DIR, RECORDS_NAME
from server.persistence.store_journal import _STORE_TABLE, _StoreJournal
from server.persistence.thread_records import _journaled_records
from tests.conftest import REPO_ROOT

THREADS = 6


class RecordStore(dict[str, Any]):
    """The runtime's record store as the journal sees it (its operations are not wrapped here)."""

    _journaled = True

    def __init__(self, filename: Path) -> None:
        super().__init__(threads=[], runs=[])
        self.filename = str(filename)


async def write_until_killed(folder: Path, *, rounds: int | None = None) -> None:
    api = folder / PERSISTENCE_DIR
    api.mkdir(parents=True, exist_ok=True)
    store = RecordStore(api / OPS_NAME)
    if (api / OPS_NAME).exists():
        store.update(load_checked((api / OPS_NAME).read_bytes()))
    acknowledged = acknowledged_in(api)
    async with (
        aiosqlite.connect(api / RECORDS_NAME, isolation_level=None) as journal,
        aiosqlite.connect(api / DATABASE_NAME) as conn,
    ):
        records = await _journaled_records(store, journal, acknowledged)
        await records.write_all()
        async with journal.execute(_STORE_TABLE):
            pass
        items: dict[tuple[str, ...], dict[str, Any]] = {("notes",): {}}
        store_journal = _StoreJournal(journal, await mark_journal_table(journal, "store_items"), acknowledged)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        await acknowledge_checkpoint_changes(conn, DATABASE_NAME, acknowledged)
        print("ready", flush=True)
        done = 0
        while rounds is None or done < rounds:
            done += 1
            thread_id = uuid.UUID(int=random.randrange(1, THREADS + 1))
            store["threads"] = [t for t in store["threads"] if t["thread_id"] != thread_id]
            store["threads"].append({"thread_id": thread_id, "status": "idle", "values": {"turn": done, "text": "x" * 300}})
            await records.write_threads([thread_id])
            if done % 7 == 0:
                await records.write_all()
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": [f"turn {done}"] * 20}
            config: Any = {"configurable": {"thread_id": str(thread_id), "checkpoint_ns": ""}}
            written = await saver.aput(config, checkpoint, {"source": "loop", "step": done}, {})
            await saver.aput_writes(written, [("messages", f"write {done}"), ("__interrupt__", {"n": done})], "task")
            items[("notes",)][f"note-{done % 5}"] = {"n": done}
            await store_journal.write(items, [(("notes",), f"note-{done % 5}")])
            if done % 11 == 0:
                await saver.adelete_thread(str(uuid.UUID(int=random.randrange(1, THREADS + 1))))
            print(f"written {done}", flush=True)


def start_writer(folder: Path, *rounds: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.unit.test_integrity_crashes", str(folder), *rounds],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )


def kill_after(folder: Path, rounds: int) -> None:
    """Start the writer on ``folder`` and SIGKILL it once it answered ``rounds`` rounds."""
    writer = start_writer(folder)
    assert writer.stdout is not None
    for line in writer.stdout:
        if line.strip() == f"written {rounds}":
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)


def test_a_sigkill_at_any_moment_leaves_files_the_check_accepts(tmp_path: Path) -> None:
    """Killed at random moments, restarted on the same folder each time: never refused, nothing noted."""
    rng = random.Random(4)
    for attempt in range(6):
        kill_after(tmp_path, rng.randrange(1, 40))
        assert read_stored_data(tmp_path).notes == [], f"kill {attempt}"
    marker = read_marker(tmp_path / PERSISTENCE_DIR / MARKER_NAME)
    assert marker is not None and all(marker.marks[db][name] > 0 for db, name in COUNTERS)


async def test_a_write_that_failed_after_its_count_is_not_acknowledged(tmp_path: Path) -> None:
    """A statement that fails after the counting trigger ran is rolled back with its count: the marker stays behind."""
    writer = Acknowledged(tmp_path / MARKER_NAME)
    async with aiosqlite.connect(tmp_path / "checkpoints.sqlite") as conn:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        await acknowledge_checkpoint_changes(conn, "checkpoints.sqlite", writer)
        # Created after the counting trigger, so it fires after it: a write to channel "fail" aborts its statement.
        await conn.execute(
            "CREATE TEMP TRIGGER refuse AFTER INSERT ON main.writes WHEN NEW.channel = 'fail' "
            "BEGIN SELECT RAISE(ABORT, 'no'); END"
        )
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}}
        await saver.aput_writes(config, [("ok", 1)], "task")
        assert writer.values[2] == 1
        with pytest.raises(sqlite3.IntegrityError):
            await saver.aput_writes(config, [("fail", 2)], "other")
        assert conn.total_changes == 4, "the counting trigger ran in the failed statement (its row, its count)"
        await saver.aput_writes(config, [("ok", 1)], "task")  # the same write again: ignored, then committed
        (held,) = await conn.execute_fetchall("SELECT mark FROM acknowledged")
    assert writer.values[2] == held[0] == 1, "the count of the failed write was not acknowledged"
    writer.close()


if __name__ == "__main__":
    asyncio.run(write_until_killed(Path(sys.argv[1]), rounds=int(sys.argv[2]) if len(sys.argv) > 2 else None))
