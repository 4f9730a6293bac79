"""The repair part of the `Source` protocol (see `base.py`): what `playbook migrate` (`repair/flow.py`)
reads and writes through a source.

`ApiRepair` (`api/repair.py`) implements it over an Agent Server: reads through the API (and the
thread records, for what a server running the candidate hides), writes with ``update_state``
through the graph the server runs. `StoreRepair` (`store/repair.py`) over a checkpointer: reads
the tables in the live code's shape, writes through the candidate compiled in-process with the
store's own saver. The methods marked with a capability are refused (`Source.require`) by a
source that lacks it; the flow asks `Source.supports` first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

from migrations_playbook.model import CandidateGraph, LiveGraph
from migrations_playbook.sources.repair_model import (
    AssistantOutcome,
    Mode,
    PendingState,
    RunUpdates,
    Served,
    ThreadOutcome,
    ThreadView,
    ViewRequest,
)


class RepairSource(Protocol):
    """What `repair` needs of a source, beyond the reads every command makes."""

    @property
    def address(self) -> str:
        """The source as the command line gave it (the URL, or the store URI): how migrate's report names it."""
        ...

    @property
    def repair_kind(self) -> Literal["api", "checkpointer"]:
        """The ``source`` of migrate's report."""
        ...

    # -- what the plan runs on ---------------------------------------------------------------

    async def repair_graphs(self, graph_ids: Sequence[str], *, migration: str, owners: Collection[str]) -> None:
        """Check the plan's graphs against what the source holds (a usage error naming the ones it lacks);
        ``owners``: the graphs a thread without a graph label can belong to."""
        ...

    async def served_code(self, graph_id: str, compiled: Any, candidate: CandidateGraph) -> Served:
        """Whether the server runs the candidate's ``graph_id`` or the live code (capability ``served_code``)."""
        ...

    async def code_locks(self, *, serves_candidate: bool) -> dict[str, dict[str, Any]] | None:
        """The contract locks of the code the threads last ran (None: none known). ``serves_candidate``:
        the source runs the candidate, whose own locks are not those."""
        ...

    async def repair_live_graphs(
        self, graph_ids: Sequence[str], served: Mapping[str, Served], locks: Mapping[str, Any] | None
    ) -> dict[str, LiveGraph]:
        """The live code's shape of each graph, which the gate judges the threads against."""
        ...

    def repair_notes(
        self, ops: Collection[str], served: Mapping[str, Served], mode: Mode, locks: Mapping[str, Any] | None
    ) -> list[str]:
        """The report's notes on where what was read came from and where the writes go (``ops``: the plan's step ops)."""
        ...

    # -- reading -------------------------------------------------------------------------------

    async def read_views(self, request: ViewRequest) -> dict[str, list[ThreadView]]:
        """Every thread of the request's graphs as a `ThreadView` (all statuses), by graph, in the source's order."""
        ...

    async def assistant_records(self, graph_id: str) -> list[dict[str, Any]]:
        """Every assistant of ``graph_id`` as the gate's rules read it, with its metadata and version
        (capability ``assistants``)."""
        ...

    async def check_fresh(self, views: Mapping[str, Sequence[ThreadView]]) -> None:
        """A usage error unless ``views`` (read on a staging copy of this source) hold every thread's
        latest checkpoint here (capability ``staging_server``)."""
        ...

    # -- writing -------------------------------------------------------------------------------

    def writing(self, compiled: Mapping[str, Any]) -> AbstractAsyncContextManager[None]:
        """Around the writes and the rollback: what they go through (a store's saver and the candidate's
        graphs compiled with it)."""
        ...

    async def write_thread(self, outcome: ThreadOutcome, migration: str, values: dict[str, Any] | None) -> None:
        """Write one planned change (``values``: encoded for update_state) as one new checkpoint stamped with
        ``migration``, based on the head that was read; verify it landed. Sets the outcome's action."""
        ...

    async def finish_thread(self, outcome: ThreadOutcome, migration: str, *, write: bool) -> str | None:
        """For a thread whose head ``migration`` already wrote (an earlier run's): complete what that run may
        have left undone after the checkpoint (``write``; else only say it), and say what (None: nothing was
        left). Idempotent."""
        ...

    async def write_assistant(self, item: AssistantOutcome, migration: str) -> None:
        """Write one assistant's new context, stamped (capability ``assistants``)."""
        ...

    async def plan_rollback(self, migration: str, graph_id: str, views: Sequence[ThreadView]) -> list[ThreadOutcome]:
        """Per thread ``migration`` touched: ``would restore`` its pre-migration head, or why not."""
        ...

    async def restore_thread(self, outcome: ThreadOutcome, migration: str) -> None:
        """A new head that copies the pre-migration head (``outcome.base``) exactly; verify it."""
        ...

    async def rollback_assistants(self, migration: str, graph_id: str) -> list[AssistantOutcome]:
        """Per assistant ``migration`` updated: its pre-migration context written back (capability ``assistants``)."""
        ...

    # -- running (the proof on staging) -----------------------------------------------------------

    async def pending_state(self, thread_id: str) -> PendingState:
        """Where the thread waits now (capability ``staging_server``)."""
        ...

    async def run_updates(self, thread_id: str, graph_id: str, *, command: Mapping[str, Any] | None = None) -> RunUpdates:
        """Continue the thread (no input, or ``command``) and collect what each node wrote (capability
        ``staging_server``)."""
        ...
