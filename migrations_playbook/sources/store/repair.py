"""The repair operations of `StoreSource` (a mixin; see `repair_protocol.py`): migrate a self-hosted checkpointer.

Read: the checkpointer source (`store/reads.py`, read-only): each thread's head as the live
code's shape derives it (a stand-in of the live lock, ``--live-contract``), so a thread paused
at a node the candidate lacks shows that node, and its values hold every key the checkpoint
holds. Nothing has to be read from a cache, as through a server running the candidate. Once the
migration has stamped a thread, it is derived in the candidate's shape (a stand-in of the
candidate's own contract).

Write: the candidate's graph compiled in-process with a writable saver on the same database
(`SqliteSaver`, or `PostgresSaver` from langgraph-checkpoint-postgres), and LangGraph's own
``graph.update_state(config, values, as_node)``, the call Agent Server makes, with the stamp
in ``config["metadata"]`` (the saver merges it into the checkpoint metadata). So a node move
is written through the candidate's edges whatever code the service runs, which makes the
moment the operator's to choose: the service must not run the live code on these threads
afterwards (a moved thread is stranded under the live code, as an unmoved one is under the
candidate). Apply while the service is stopped for the rollout, between the old code's stop
and the candidate's start. A store cannot tell a run in progress from one that died, so every
thread with work pending and no interrupt ("busy") is skipped and named.

Rollback copies the pre-migration head (as ``update_state(as_node="__copy__")`` does), as through
the API. A store has no assistants and runs nothing (no proof on it).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Literal

from migrations_playbook.errors import LiveUnreachable, UsageError
from migrations_playbook.model import CandidateGraph, LiveGraph
from migrations_playbook.sources.interrupts import PendingInterrupt
from migrations_playbook.sources.repair_model import (
    BASE_KEY,
    HISTORY_LIMIT,
    MIGRATION_KEY,
    MOVED_KEY,
    AssistantOutcome,
    Mode,
    PendingState,
    RunUpdates,
    Served,
    ThreadOutcome,
    ThreadView,
    ViewRequest,
    stamped_by,
)
from migrations_playbook.sources.store.tables import Store


def sqlite_saver() -> Any:
    """langgraph-checkpoint-sqlite's ``SqliteSaver`` (to write a SQLite store), or a usage error naming
    the extra: reading a SQLite store needs nothing but Python's sqlite3, writing needs the saver."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise UsageError(
            "writing to a SQLite store (or a copy of one) goes through langgraph-checkpoint-sqlite's "
            "SqliteSaver: pip install 'langgraph-playbook[sqlite]'"
        ) from None
    return SqliteSaver


@contextlib.contextmanager
def writable_saver(uri: str) -> Iterator[Any]:
    """A saver that writes to the store (the service's own saver class)."""
    from migrations_playbook.sources.store.tables import redact, scrub

    if uri.startswith("sqlite:///"):
        SqliteSaver = sqlite_saver()  # noqa: N806 - a class
        connection = sqlite3.connect(uri.removeprefix("sqlite://"), check_same_thread=False)
        try:
            yield SqliteSaver(connection)
        finally:
            connection.close()
        return
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise UsageError(
            "writing to PostgreSQL needs langgraph-checkpoint-postgres: pip install 'langgraph-playbook[postgres]'"
        ) from None
    try:
        manager = PostgresSaver.from_conn_string(uri)
        saver = manager.__enter__()
    except Exception as exc:  # noqa: BLE001 - psycopg's connection errors: the store is unreachable
        raise LiveUnreachable(f"checkpointer {redact(uri)} is unreachable for writing: {scrub(str(exc), uri)}") from None
    try:
        yield saver
    finally:
        manager.__exit__(None, None, None)


def _cid(config: Mapping[str, Any] | None) -> str | None:
    return ((config or {}).get("configurable") or {}).get("checkpoint_id")


def _root_config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _copy_head(saver: Any, thread_id: str, base: Any, migration: str) -> str:
    """What ``update_state(as_node="__copy__")`` writes (the base's channels, versions and parent, as
    a new checkpoint), but keeping the base's metadata: LangGraph's copy writes only
    source/step/parents, and a store's threads are attributed by their ``graph_id`` metadata."""
    from datetime import UTC, datetime

    from langgraph.checkpoint.base import copy_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    step = int(base.metadata.get("step", -1))
    checkpoint = copy_checkpoint(base.checkpoint)
    checkpoint["id"] = str(uuid6(clock_seq=step + 1))
    checkpoint["ts"] = datetime.now(UTC).isoformat()
    metadata = {k: v for k, v in base.metadata.items() if k not in ("writes", MIGRATION_KEY, BASE_KEY, MOVED_KEY)}
    metadata.update(source="fork", step=step + 1, playbook_rolled_back=migration)
    parent = base.parent_config or _root_config(thread_id)
    written = saver.put(parent, checkpoint, metadata, {})
    checkpoint_id: str = written["configurable"]["checkpoint_id"]
    return checkpoint_id


class StoreRepair:
    """Mixed into `StoreSource`."""

    uri: str
    label: str
    request: Any  # the source's `SourceRequest`
    locks: dict[str, dict[str, Any]]
    attribution: Any  # the source's `Attribution`
    opened: Callable[[], contextlib.AbstractContextManager[Store]]
    _attribution: Callable[[set[str]], Any]
    require: Callable[[Any, str], None]
    _saver: Any = None
    _graphs: dict[str, Any] | None = None
    _bases: dict[str, Any] | None = None
    """The pre-migration head of each thread `plan_rollback` would restore (its checkpoint tuple)."""

    @property
    def address(self) -> str:
        return self.uri

    @property
    def repair_kind(self) -> Literal["api", "checkpointer"]:
        return "checkpointer"

    # -- what the plan runs on ---------------------------------------------------------------

    async def repair_graphs(self, graph_ids: Sequence[str], *, migration: str, owners: Collection[str]) -> None:
        missing = [g for g in graph_ids if g not in self.locks]
        if missing:
            raise UsageError(f"--live-contract {self.request.live_contract} has no lock for {', '.join(missing)}")
        self.attribution = self._attribution(set(owners))

    async def served_code(self, graph_id: str, compiled: Any, candidate: CandidateGraph) -> Served:
        self.require("served_code", "which code the server runs")
        return "candidate"

    async def code_locks(self, *, serves_candidate: bool) -> dict[str, dict[str, Any]] | None:
        return self.locks

    async def repair_live_graphs(
        self, graph_ids: Sequence[str], served: Mapping[str, Served], locks: Mapping[str, Any] | None
    ) -> dict[str, LiveGraph]:
        from migrations_playbook.sources.store.reads import live_graphs

        return live_graphs(self.locks, graph_ids)

    def repair_notes(
        self, ops: Collection[str], served: Mapping[str, Served], mode: Mode, locks: Mapping[str, Any] | None
    ) -> list[str]:
        notes = [
            f"threads read from checkpointer {self.label} (read-only); the live shape from --live-contract "
            f"{self.request.live_contract}",
            "writes go through the candidate compiled in-process with the store's saver: apply while "
            "the service is stopped for the rollout (a moved thread is stranded under the live code)",
        ]
        if "context" in ops:
            notes.append("a checkpointer has no assistants: the plan's context steps do not apply here")
        return notes

    # -- reading -------------------------------------------------------------------------------

    async def read_views(self, request: ViewRequest) -> dict[str, list[ThreadView]]:
        """Read-only; a thread this migration stamped is derived in the candidate's shape."""
        from migrations_playbook.graphcode.contract import lock_document
        from migrations_playbook.graphcode.describe import contract_of
        from migrations_playbook.sources.store.reads import HeadsSaver, snapshot
        from migrations_playbook.sources.store.standin import StandIns

        graphs = request.graph_ids
        new_locks = {g: lock_document(contract_of(g, request.compiled[g])) for g in graphs}
        views: dict[str, list[ThreadView]] = {g: [] for g in graphs}
        saver = HeadsSaver()
        live_ins = {g: StandIns(self.locks[g], saver) for g in graphs}
        new_ins = {g: StandIns(new_locks[g], saver) for g in graphs}
        with self.opened() as store:
            for thread in store.threads():
                graph_id = self.attribution.graph_of(thread)
                if graph_id not in views:
                    continue
                root = thread.root
                metadata = dict(root.metadata) if root is not None else {}
                mine = stamped_by(metadata, request.migration)
                lock, ins = (new_locks[graph_id], new_ins[graph_id]) if mine else (self.locks[graph_id], live_ins[graph_id])
                snap = snapshot(thread, graph_id, lock, ins, saver)
                head = root.saved.config["configurable"].get("checkpoint_id") if root is not None and root.saved else None
                interrupts = tuple(
                    PendingInterrupt(path=task.path, value=value)
                    for task in snap.tasks
                    if task.interrupted
                    for value in task.interrupt_values
                )
                views[graph_id].append(
                    ThreadView(
                        thread_id=snap.thread_id,
                        graph_id=graph_id,
                        status=snap.status,
                        values=dict(snap.values),
                        head=head if snap.unreadable is None else None,
                        metadata=metadata,
                        next=snap.next,
                        pending=snap.pending,
                        interrupts=interrupts,
                        snapshot=snap,
                    )
                )
        return views

    async def assistant_records(self, graph_id: str) -> list[dict[str, Any]]:
        self.require("assistants", "a plan's context steps")
        return []

    async def check_fresh(self, views: Mapping[str, Sequence[ThreadView]]) -> None:
        self.require("staging_server", "a staging copy's freshness")

    # -- writing -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def writing(self, compiled: Mapping[str, Any]) -> AsyncIterator[None]:
        with writable_saver(self.uri) as saver:
            self._saver = saver
            self._graphs = {g: graph.copy(update={"checkpointer": saver}) for g, graph in compiled.items()}
            self._bases = {}
            try:
                yield
            finally:
                self._saver, self._graphs, self._bases = None, None, None

    def _writer(self) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        if self._saver is None or self._graphs is None or self._bases is None:
            raise RuntimeError("StoreSource written to outside `writing()`")
        return self._saver, self._graphs, self._bases

    async def write_thread(self, outcome: ThreadOutcome, migration: str, values: dict[str, Any] | None) -> None:
        saver, graphs, _ = self._writer()
        graph = graphs[outcome.graph_id]
        change = outcome.change
        assert change is not None and outcome.base is not None  # only "would change" outcomes get here
        latest = saver.get_tuple(_root_config(outcome.thread_id))
        if latest is None or latest.config["configurable"].get("checkpoint_id") != outcome.base:
            outcome.action, outcome.reason = "skipped: moved on", "its head changed since it was read; run migrate again"
            return
        stamp = {MIGRATION_KEY: migration, BASE_KEY: outcome.base}
        graph_label = latest.metadata.get("graph_id")
        if isinstance(graph_label, str):
            stamp["graph_id"] = graph_label  # a store's threads are attributed by it; an update carries no run metadata
        if change.move is not None:
            stamp[MOVED_KEY] = f"{change.move.from_node}->{change.move.to_node}"
        config = {**_root_config(outcome.thread_id, outcome.base), "metadata": stamp}
        try:
            written = graph.update_state(config, values, as_node=change.move.as_node if change.move is not None else None)
        except Exception as exc:  # noqa: BLE001 - LangGraph's InvalidUpdateError and the saver's errors, named per thread
            outcome.action, outcome.reason = "failed", f"update_state refused: {type(exc).__name__}: {exc}"
            return
        outcome.new_head = written["configurable"].get("checkpoint_id")
        after = saver.get_tuple(_root_config(outcome.thread_id))
        if (
            after is None
            or after.config["configurable"].get("checkpoint_id") != outcome.new_head
            or not stamped_by(after.metadata, migration)
        ):
            outcome.action, outcome.reason = "failed", "written, but the new head does not carry the migration stamp"
            return
        if change.move is not None and change.move.to_node not in graph.get_state(_root_config(outcome.thread_id)).next:
            outcome.action, outcome.reason = "failed", f"written, but the candidate does not schedule {change.move.to_node!r}"
            return
        outcome.action = "changed"

    async def finish_thread(self, outcome: ThreadOutcome, migration: str, *, write: bool) -> str | None:
        return None  # a store's write is its one checkpoint: nothing is left after it

    async def write_assistant(self, item: AssistantOutcome, migration: str) -> None:
        self.require("assistants", "a plan's context steps")

    # -- rollback ----------------------------------------------------------------------------------

    async def plan_rollback(self, migration: str, graph_id: str, views: Sequence[ThreadView]) -> list[ThreadOutcome]:
        """No busy check: a moved thread waits at its new node with no interrupt, which a store reports
        as busy; the service is stopped for a rollback as for the apply."""
        saver, _, bases = self._writer()
        outcomes = []
        for view in views:
            history = list(saver.list(_root_config(view.thread_id), limit=HISTORY_LIMIT))
            stamped = [i for i, t in enumerate(history) if stamped_by(t.metadata, migration)]
            if not stamped:
                continue
            newest = history[stamped[0]]
            base_id = newest.metadata.get(BASE_KEY) or (newest.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            base = next((t for t in history if t.config["configurable"].get("checkpoint_id") == base_id), None)
            outcome = ThreadOutcome(view.thread_id, view.graph_id, view.status, "would restore", blocks=view.blocks, base=base_id)
            outcomes.append(outcome)
            if base is None:
                outcome.action, outcome.reason = (
                    "failed",
                    f"the pre-migration head {base_id} is not in the last {HISTORY_LIMIT} checkpoints",
                )
                continue
            head = history[0]
            if stamped[0] != 0:
                copy_of_base = (
                    head.metadata.get("source") == "fork"
                    and _cid(head.parent_config) == _cid(base.parent_config)
                    and head.checkpoint["channel_values"] == base.checkpoint["channel_values"]
                )
                if copy_of_base:
                    outcome.action, outcome.new_head = "already restored", head.config["configurable"].get("checkpoint_id")
                else:
                    outcome.action = "skipped: moved on"
                    outcome.reason = f"{stamped[0]} checkpoint(s) were written after the migration: rolling back would drop them"
                continue
            bases[view.thread_id] = base
        return outcomes

    async def restore_thread(self, outcome: ThreadOutcome, migration: str) -> None:
        saver, _, bases = self._writer()
        base = bases[outcome.thread_id]
        outcome.new_head = _copy_head(saver, outcome.thread_id, base, migration)
        after = saver.get_tuple(_root_config(outcome.thread_id))
        if after is None or after.checkpoint["channel_values"] != base.checkpoint["channel_values"]:
            outcome.action, outcome.reason = "failed", "the restored head's channels differ from the pre-migration head's"
        else:
            outcome.action = "restored"

    async def rollback_assistants(self, migration: str, graph_id: str) -> list[AssistantOutcome]:
        self.require("assistants", "a plan's context steps")
        return []

    # -- running -------------------------------------------------------------------------------------

    async def pending_state(self, thread_id: str) -> PendingState:
        self.require("staging_server", "resuming a thread on a staging copy")
        return PendingState(next=(), interrupts=())

    async def run_updates(self, thread_id: str, graph_id: str, *, command: Mapping[str, Any] | None = None) -> RunUpdates:
        self.require("staging_server", "resuming a thread on a staging copy")
        return {}, None
