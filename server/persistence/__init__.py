"""Crash-safe persistence for `langgraph dev` (local only): checkpoints in SQLite, records journaled on every write.

Why: langgraph-runtime-inmem 0.36.7 keeps checkpoints in dicts it pickles every
10 s. Its ``Checkpointer(unpack_hook=...)`` (langgraph_runtime_inmem/checkpoint.py,
lines 289-296), which every state read and the run-creation handler call, builds a
second saver whose dicts register under the same file names in the flush loop
(``_persistence.py`` line 28: ``_stores[d.filename] = weakref.ref(d)``), then
swaps in the first saver's dicts. The throwaway dicts die, the flush loop drops
their dead references (line 62), and from then on the real checkpoints reach disk
only on a graceful stop. A SIGKILL then loses every checkpoint since the first read.
The thread and run records (``.langgraph_ops.pckl``) are flushed every 10 s, so a
crash also loses the last 10 s of them: a thread created just before is gone, an
approved ticket's record still says ``interrupted``.

What this package does instead, when `langgraph.json` names
``server.persistence.dev_checkpointer`` (``"backend": "custom"``; the server imports this
package and reads the name from it), one module per concern:

* `checkpointer`: `dev_checkpointer`, the factory the server enters at start-up: checkpoints
  in ``.langgraph_api/checkpoints.sqlite``, and everything below set up before the server
  serves; it refuses to run on any runtime but `langgraph dev`'s;
* `files`: where the data lives, ``.langgraph_api/`` in the server's working folder;
* `thread_records`: each thread's record and runs journaled in ``records.sqlite`` after
  every operation that changes them, before the server answers;
* `thread_status`: a thread's record set from its runs and head checkpoint after every
  operation that touches them (``busy`` while a run is in flight, else ``interrupted``,
  ``idle`` or ``error``), and a rollback's own deletions of the runs it cancels;
* `record_index`: a thread's record and runs found by id, in step with the runtime's lists (the
  journal, `thread_status` and the run handler's admission read them per operation: a scan of
  every record made each run cost more with every thread stored);
* `index_lock`: thread deletes and patches one at a time;
* `store_journal`: store items journaled in ``records.sqlite`` before the write returns;
* `cut_off_runs`: a run cut off by a crash retried from its last checkpoint;
* `saver`: a run's checkpoints deleted with the run when nothing else stands on them;
* `adapter`: the saver's sync methods and fast paths passed through the server's wrapper;
* `context_schemas`: each graph's context JSON schema built once per schema class;
* `stored_data`: the server refuses to start when a stored file cannot be read, or lost what it held;
* `integrity`: whether each database and its ``-wal`` hold every committed and acknowledged write,
  read before anything opens them;
* `acknowledged`: what the server acknowledged of each database, counted in the database and in
  ``.langgraph_api/acknowledged``, apart from it;
* `checked_pickles`: the runtime's pickles written with a checksum, and read back against it.

This module re-exports the names the server, the bench and the tests import from
``server.persistence`` (the unit tests also reach a few private helpers through it).
Nothing happens at import: the databases are opened when the server enters the factory
at start-up.
"""

from server.persistence.adapter import FAST_PATHS, SYNC_METHODS
from server.persistence.adapter import _let_the_adapter_call_sync_methods as _let_the_adapter_call_sync_methods
from server.persistence.checkpointer import LOCAL_RUNTIME, LocalOnlyError, dev_checkpointer
from server.persistence.context_schemas import _keep_context_schemas as _keep_context_schemas
from server.persistence.files import DATABASE_NAME, OPS_NAME, PERSISTENCE_DIR, RECORDS_NAME, STORE_NAMES, database_path
from server.persistence.integrity import StoredDataError
from server.persistence.stored_data import (
    StoredData,
    check_stored_data,
    read_stored_data,
    refuse_to_start_on_unreadable_data,
)
from server.persistence.thread_records import FINAL_RUN_STATUSES, RECORD_WRITES, WHOLE_STORE
from server.persistence.thread_records import _journaled_records as _journaled_records
from server.persistence.thread_records import _Records as _Records

__all__ = [
    "DATABASE_NAME",
    "FAST_PATHS",
    "FINAL_RUN_STATUSES",
    "LOCAL_RUNTIME",
    "OPS_NAME",
    "PERSISTENCE_DIR",
    "RECORDS_NAME",
    "RECORD_WRITES",
    "STORE_NAMES",
    "SYNC_METHODS",
    "WHOLE_STORE",
    "LocalOnlyError",
    "StoredData",
    "StoredDataError",
    "check_stored_data",
    "database_path",
    "dev_checkpointer",
    "read_stored_data",
    "refuse_to_start_on_unreadable_data",
]
