"""The SQLite saver `dev_checkpointer` hands the server: ``AsyncSqliteSaver`` with `adelete_for_runs`.

A run's checkpoints are deleted with the run when nothing else stands on them (the latest
run of its thread, started from new input); otherwise they are kept, so that the thread's
later state stays whole. The class is built on first use (`_dev_saver_class`) and finds a
run's thread in the runtime's run records (`_thread_of_run`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any


def _thread_of_run(store: Any, run_id: str) -> str | None:
    """The thread of a run the runtime still has a record of (it deletes the record after the checkpoints)."""
    from server.persistence.record_index import index_of

    run = index_of(store).run(run_id)
    return str(run["thread_id"]) if run is not None else None


_RUN_ID = "json_extract(CAST(metadata AS TEXT), '$.run_id')"
"""A checkpoint's ``run_id`` metadata, as langgraph-checkpoint-sqlite's own filters read it."""


@functools.cache
def _dev_saver_class(base: type) -> type:
    """``AsyncSqliteSaver`` with `adelete_for_runs`, which ``DELETE /threads/{id}/runs/{run_id}`` calls.

    Built on first use (the base imports aiosqlite, which only `langgraph dev` needs). The
    server's wrapper forwards the method only when the saver's class defines it, and
    answered every run deletion with a 500 without it.
    """

    class DevSqliteSaver(base):  # type: ignore[misc]  # the base class is passed in (lazy import)
        thread_of_run: Callable[[str], str | None] = staticmethod(lambda run_id: None)
        """run id -> its thread, from the runtime's run records (`dev_checkpointer` sets it)."""

        async def adelete_for_runs(self, run_ids: Iterable[str]) -> None:
            """Delete each run's checkpoints and their writes, when nothing else stands on them.

            BaseCheckpointSaver documents it as deleting every checkpoint and write of the
            runs, and warns that deleting rows a live thread's state is rebuilt from
            corrupts it (a `DeltaChannel` replays the writes back to its last snapshot,
            graphs/common/history.py). So a run's checkpoints go only when no other run
            wrote a checkpoint on its thread after it started, and it started from new
            input (a resume or a continuation writes its answer and its first step's
            results on the previous run's checkpoint, where they would be left pending
            without the run). The thread is then back at the checkpoint before the run;
            otherwise the checkpoints stay, and the thread's state with them. Only the
            run's own thread is touched: a copy carries the same ``run_id`` metadata.
            """
            for run_id in {str(r) for r in run_ids}:
                thread_id = self.thread_of_run(run_id)
                if thread_id is not None:
                    await self._delete_checkpoints_of_run(thread_id, run_id)

        async def _delete_checkpoints_of_run(self, thread_id: str, run_id: str) -> None:
            async with self.lock, self.conn.cursor() as cur:
                await cur.execute(
                    "SELECT checkpoint_ns, checkpoint_id, json_extract(CAST(metadata AS TEXT), '$.source') "
                    f"FROM checkpoints WHERE thread_id = ? AND {_RUN_ID} = ? ORDER BY checkpoint_id",
                    (thread_id, run_id),
                )
                mine = list(await cur.fetchall())
                if not mine:
                    return
                first_root = next((row for row in mine if row[0] == ""), None)
                await cur.execute(
                    f"SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ? AND "
                    f"({_RUN_ID} IS NULL OR {_RUN_ID} != ?) LIMIT 1",
                    (thread_id, mine[0][1], run_id),
                )
                if first_root is None or first_root[2] != "input" or await cur.fetchone() is not None:
                    return  # other checkpoints stand on this run's: kept
                keys = [(thread_id, ns, checkpoint_id) for ns, checkpoint_id, _ in mine]
                await cur.executemany("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", keys)
                await cur.executemany(
                    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", keys
                )
                await self.conn.commit()

    return DevSqliteSaver
