"""A stand-in for the server's writes, through the same code, for the crash tests of the start-up check.

``python -m tests.unit.integrity_writer FOLDER [ROUNDS]`` keeps writing to ``FOLDER/.langgraph_api/``
as `dev_checkpointer` does: thread records journaled and acknowledged (`thread_records`),
now and then a pickle of every record, store items (`store_journal`), checkpoints and
their writes through langgraph-checkpoint-sqlite's ``AsyncSqliteSaver`` with every change
counted (`acknowledged`), and threads' checkpoints deleted. It prints ``ready`` once it
started (as the server would: the journal laid over the pickle, the pickle rewritten), then
``written N`` after each round, until it is killed (or, after ROUNDS rounds, closes its
databases as a graceful stop does). Started again on the same folder, it counts on from
what is there. No server, no sockets: the unit lane runs it.
"""

from __future__ import annotations

import asyncio
import random
import sys
import uuid
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from server.persistence.acknowledged import acknowledge_checkpoint_changes, acknowledged_in, mark_journal_table
from server.persistence.checked_pickles import load_checked
from server.persistence.files import DATABASE_NAME, OPS_NAME, PERSISTENCE_DIR, RECORDS_NAME
from server.persistence.store_journal import _STORE_TABLE, _StoreJournal
from server.persistence.thread_records import _journaled_records

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


if __name__ == "__main__":
    asyncio.run(write_until_killed(Path(sys.argv[1]), rounds=int(sys.argv[2]) if len(sys.argv) > 2 else None))
