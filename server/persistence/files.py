"""Where a `langgraph dev` server keeps its data: the runtime's folder in the server's working folder, and its files.

``.langgraph_api/`` holds the runtime's own pickles (threads, runs, assistants and crons; the
long-term store) and the two SQLite databases this package adds (the checkpoints, and the
journal of thread records and store items). `dev_checkpointer` opens the databases,
`check_stored_data` reads every file at start-up; the bench and the crash tests find the
checkpoints with `database_path`.
"""

from __future__ import annotations

from pathlib import Path

PERSISTENCE_DIR = Path(".langgraph_api")
"""The runtime's own folder, relative to the server's working folder."""

DATABASE_NAME = "checkpoints.sqlite"
"""The checkpoints' SQLite file inside `PERSISTENCE_DIR` (plus its ``-wal``/``-shm``)."""

RECORDS_NAME = "records.sqlite"
"""The thread-record journal inside `PERSISTENCE_DIR` (plus its ``-wal``/``-shm``)."""

OPS_NAME = ".langgraph_ops.pckl"
"""The runtime's pickle of threads, runs, assistants and crons inside `PERSISTENCE_DIR`."""

STORE_NAMES = ("store.pckl", "store.vectors.pckl")
"""The runtime's pickles of the long-term store (items, and their vectors) inside `PERSISTENCE_DIR`."""

UNREAD_PICKLES = (".langgraph_checkpoint.*.pckl", ".langgraph_retry_counter.pckl")
"""Pickles the runtime writes and this server never reads its data from: the in-memory checkpointer's (the
checkpoints are in `DATABASE_NAME`; the runtime loads them at a graceful stop and writes them back) and the run
retry counter (written, never loaded)."""


def database_path(workdir: Path | None = None) -> Path:
    """Where the checkpoints of a server running in ``workdir`` (default: here) live."""
    return (workdir or Path.cwd()) / PERSISTENCE_DIR / DATABASE_NAME
