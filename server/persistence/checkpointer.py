"""`dev_checkpointer`: the checkpointer `langgraph dev` enters at start-up, and what it sets up around it.

Checkpoints go to ``.langgraph_api/checkpoints.sqlite`` in the server's working folder,
through langgraph-checkpoint-sqlite's ``AsyncSqliteSaver`` (WAL, one synced commit per
checkpoint and per write batch; the class: `saver`), with the Agent Server's own
serializer. The server enters the factory once per thread that asks for a checkpointer;
the first entry owns the process's records: it opens the journal and lays it over them
(`thread_records`), patches the server's wrapper (`adapter`) and langgraph's context
schemas (`context_schemas`), retries the runs a crash cut off (`cut_off_runs`), journals
the store (`store_journal`), and at shutdown writes the records' pickle once more. Every
entry counts the acknowledged writes of its databases in ``.langgraph_api/acknowledged``
(`acknowledged`), which the start-up check compares with them (`integrity`).

Local only: on any runtime but the in-memory one (the standalone Agent Server,
LangSmith Deployments) the factory refuses to start (`LocalOnlyError`), so a deployment
never writes its checkpoints to a container's SQLite file. Deployments set
``LANGGRAPH_CHECKPOINTER`` without ``backend``/``path`` (deploy/docker-compose.yml),
which replaces this entry and keeps the platform's PostgreSQL.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from server.persistence import thread_records
from server.persistence.acknowledged import acknowledge_checkpoint_changes, acknowledged_in
from server.persistence.adapter import _let_the_adapter_call_sync_methods
from server.persistence.context_schemas import _keep_context_schemas
from server.persistence.cut_off_runs import _retry_cut_off_runs_from_their_checkpoints
from server.persistence.files import DATABASE_NAME, RECORDS_NAME, database_path
from server.persistence.saver import _dev_saver_class, _thread_of_run
from server.persistence.store_journal import _journal_store_writes
from server.persistence.thread_records import _journaled_records

LOCAL_RUNTIME = "inmem"
"""The runtime edition `langgraph dev` runs (``LANGGRAPH_RUNTIME_EDITION``)."""


_RECORDS_OWNED = False
"""Whether an entry of `dev_checkpointer` owns the records (the first one; later ones only open a saver)."""


def _disown() -> None:
    global _RECORDS_OWNED
    _RECORDS_OWNED = False


class LocalOnlyError(RuntimeError):
    """`dev_checkpointer` was loaded by a server that is not `langgraph dev`."""


@contextlib.asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer `langgraph dev` enters at start-up (langgraph.json ``checkpointer.path``)."""
    edition = os.environ.get("LANGGRAPH_RUNTIME_EDITION", LOCAL_RUNTIME)
    if edition != LOCAL_RUNTIME:
        raise LocalOnlyError(
            f"server.persistence.dev_checkpointer is for `langgraph dev` only, and this server runs "
            f"the {edition!r} runtime. Keep the platform's own persistence: set LANGGRAPH_CHECKPOINTER "
            "without backend/path (as deploy/docker-compose.yml does), which replaces langgraph.json's entry."
        )
    import aiosqlite  # only `langgraph dev` needs the driver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph_api.serde import Serializer  # type: ignore[import-untyped]  # the server's own serde; no type info
    from langgraph_runtime_inmem.database import GLOBAL_STORE  # type: ignore[import-untyped]  # loaded by start_pool; no type info

    global _RECORDS_OWNED
    path = database_path()
    path.parent.mkdir(exist_ok=True)
    # The server enters the factory once per thread that asks for a checkpointer; the records
    # are the process's, so only the first entry lays the journal over them and owns it.
    owner, _RECORDS_OWNED = not _RECORDS_OWNED, True
    acknowledged = acknowledged_in(path.parent)
    async with contextlib.AsyncExitStack() as stack:
        if owner:
            stack.callback(_disown)
            records_db = aiosqlite.connect(path.with_name(RECORDS_NAME), isolation_level=None)
            records = await _journaled_records(GLOBAL_STORE, await stack.enter_async_context(records_db), acknowledged)
            stack.callback(records.close)
        conn = await stack.enter_async_context(aiosqlite.connect(path))
        saver = _dev_saver_class(AsyncSqliteSaver)(conn, serde=Serializer())
        saver.thread_of_run = functools.partial(_thread_of_run, GLOBAL_STORE)
        await saver.setup()
        await acknowledge_checkpoint_changes(conn, DATABASE_NAME, acknowledged)
        if not owner:
            yield saver
            return
        _let_the_adapter_call_sync_methods()
        _keep_context_schemas()
        await _retry_cut_off_runs_from_their_checkpoints(saver, GLOBAL_STORE)
        await records.write_all()
        await _journal_store_writes(records.journal, acknowledged)
        thread_records._RECORDS = records
        try:
            yield saver
        finally:
            thread_records._RECORDS = None
            await records.write_all()  # before the runtime's own final pickle, which writes the same
