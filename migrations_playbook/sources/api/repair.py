"""The repair operations of `ApiSource` (a mixin; see `repair_protocol.py`): migrate through the Agent Server API.

Writes. One new checkpoint per thread with `threads.update_state`: the values, and for a node
move ``as_node=<the node before the new one>``, so the candidate schedules the new node. The
checkpoint is based on the head that was read (``checkpoint_id``), and its metadata carries the
migration id, the pre-migration head and the move (extra keys of the ``checkpoint`` object reach
the checkpoint's configurable, and LangGraph's savers copy scalar configurable keys into checkpoint
metadata; verified on `langgraph dev` 0.16.7 after every write). A busy thread (a run in flight:
the server refuses the update with 409) is skipped and named. No node, model or tool runs.
`update_state` writes through the graph the server runs (`served_code` tells which one).

Rollback restores, per thread whose newest stamped checkpoint is still its head, the
pre-migration head as a new checkpoint: ``update_state(as_node="__copy__")`` from that head's
id, which copies its channels exactly (values and the triggers that make its ``next``); the
migration's checkpoints stay in the history. A thread that moved on since (a run after the
migration) is not rolled back, and is named.

After a write, the thread's metadata is stamped with its record's ``state_updated_at``
(`state.MIGRATED_STATE_KEY`): Agent Server rebuilds the record from the checkpoint the update started
from, so until the thread's state is written again the record's values are the pre-repair ones, and
the gate reads such a thread's state instead (`state.record_is_stale`).

The reads are `api/views.py`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError, ConflictError, NotFoundError

from migrations_playbook.errors import UsageError
from migrations_playbook.graphcode.contract import read_locks
from migrations_playbook.model import CandidateGraph, LiveGraph, Topology
from migrations_playbook.sources.api import reads as api
from migrations_playbook.sources.api.state import MIGRATED_STATE_KEY
from migrations_playbook.sources.api.views import read_threads
from migrations_playbook.sources.interrupts import pending_interrupts
from migrations_playbook.sources.repair_model import (
    BASE_KEY,
    CONTEXT_BASE_KEY,
    CONTEXT_MIGRATION_KEY,
    HISTORY_LIMIT,
    MIGRATION_KEY,
    MOVED_KEY,
    ROLLED_BACK_KEY,
    Action,
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


def _id(state: Mapping[str, Any] | None) -> str | None:
    return ((state or {}).get("checkpoint") or {}).get("checkpoint_id")


def _parent(state: Mapping[str, Any] | None) -> str | None:
    return ((state or {}).get("parent_checkpoint") or {}).get("checkpoint_id")


def _is_copy_of(head: Mapping[str, Any], base: Mapping[str, Any]) -> bool:
    return (
        (head.get("metadata") or {}).get("source") == "fork"
        and _parent(head) == _parent(base)
        and head.get("values") == base.get("values")
        and list(head.get("next") or []) == list(base.get("next") or [])
    )


class ApiRepair:
    """Mixed into `ApiSource`."""

    url: str
    request: Any  # the source's `SourceRequest`
    _served_ids: dict[str, str]

    @property
    def client(self) -> LangGraphClient:
        raise NotImplementedError  # `ApiSource.client`

    @property
    def address(self) -> str:
        return self.url

    @property
    def repair_kind(self) -> Literal["api", "checkpointer"]:
        return "api"

    # -- what the plan runs on ---------------------------------------------------------------

    async def repair_graphs(self, graph_ids: Sequence[str], *, migration: str, owners: Collection[str]) -> None:
        self._served_ids = await api.live_graph_ids(self.client)
        absent = [g for g in graph_ids if g not in self._served_ids]
        if absent:
            raise UsageError(
                f"graph(s) {', '.join(absent)} of plan {migration} not on the server; it serves: "
                f"{', '.join(sorted(self._served_ids)) or 'none'}"
            )

    async def served_code(self, graph_id: str, compiled: Any, candidate: CandidateGraph) -> Served:
        """Whether the server runs the candidate's ``graph_id``: the same drawn nodes and edges and the same
        input and output JSON schemas. Anything else (errs towards "live code") means the live code."""
        assistant_id = self._served_ids[graph_id]
        plain, xray, schemas = await asyncio.gather(
            self.client.assistants.get_graph(assistant_id),
            self.client.assistants.get_graph(assistant_id, xray=True),
            self.client.assistants.get_schemas(assistant_id),
        )
        if Topology.from_drawings(plain, xray) != candidate.topology:
            return "live code"
        try:
            mine = {"input_schema": compiled.get_input_jsonschema(), "output_schema": compiled.get_output_jsonschema()}
        except Exception:  # noqa: BLE001 - a graph whose schema cannot be drawn: compare the drawing only
            return "candidate"
        for key, value in mine.items():
            if json.loads(json.dumps(value, default=str)) != schemas.get(key):
                return "live code"
        return "candidate"

    async def code_locks(self, *, serves_candidate: bool) -> dict[str, dict[str, Any]] | None:
        folder = self.request.live_contract
        if folder:
            path = Path(folder)
            if not path.exists():
                raise UsageError(f"--live-contract {folder}: no such file or folder")
            try:
                return read_locks(path)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"--live-contract {folder}: not a folder of contract locks ({exc})") from None
        if not serves_candidate:  # the server runs the code the threads last ran (a staging copy's live server)
            return await api.served_locks(self.client)
        return None  # a server running the candidate serves the candidate's locks: not the live side

    async def repair_live_graphs(
        self, graph_ids: Sequence[str], served: Mapping[str, Served], locks: Mapping[str, Any] | None
    ) -> dict[str, LiveGraph]:
        live_graphs: dict[str, LiveGraph] = {}
        for graph_id in graph_ids:
            lock = (locks or {}).get(graph_id)
            if served[graph_id] == "candidate":
                if lock is None:
                    raise UsageError(
                        f"the server runs the candidate's {graph_id}, which hides the steps it no longer has: pass "
                        "--live-contract DIR, the contract locks of the code these threads last ran "
                        "(`playbook contract --write` on the deployed commit)"
                    )
                live_graphs[graph_id] = LiveGraph(
                    graph_id=graph_id,
                    topology=Topology.from_lock(lock),
                    reducers=api.reducers_from_lock(lock),
                    lock=dict(lock),
                )
            else:
                live_graphs.update(await api.live_graphs(self.client, {graph_id: self._served_ids[graph_id]}, locks))
        return live_graphs

    def repair_notes(
        self, ops: Collection[str], served: Mapping[str, Served], mode: Mode, locks: Mapping[str, Any] | None
    ) -> list[str]:
        notes = []
        if self.request.live_contract:
            notes.append(f"the live code's locks from {self.request.live_contract}")
        elif locks is not None:
            notes.append("the live code's locks as the live server serves them")
        for graph_id, s in sorted(served.items()):
            if s == "candidate":
                notes.append(
                    f"{graph_id}: the server runs the candidate; steps it no longer schedules and keys it no longer "
                    "declares were read from each thread's record (its last run's interrupts and values)"
                )
            elif mode == "dry run":
                notes.append(
                    f"{graph_id}: the server runs the live code. Apply AFTER the rollout, on the server running the "
                    "candidate (update_state writes through the graph the server runs); prove it first on a staging "
                    "copy: --persistence DIR"
                )
        if "move_node" in ops:
            notes.append(
                "a moved thread waits at its new node without a question until it is continued: a run with no input asks "
                "it again there, and a client's Command(resume=answer) is taken by that node's first interrupt()"
            )
        return notes

    # -- reading -------------------------------------------------------------------------------

    async def read_views(self, request: ViewRequest) -> dict[str, list[ThreadView]]:
        return {
            g: await read_threads(
                self.client,
                g,
                served=request.served[g],
                candidate=request.candidates[g],
                lock=(request.locks or {}).get(g),
                moved_from=request.moved_from,
            )
            for g in request.graph_ids
        }

    async def assistant_records(self, graph_id: str) -> list[dict[str, Any]]:
        found = []
        async for page in api.assistant_pages(self.client, graph_id):
            for assistant in page:
                meta = assistant.get("metadata") or {}
                found.append(
                    {
                        "assistant_id": assistant["assistant_id"],
                        "context": assistant.get("context") or {},
                        "system": meta.get("created_by") == "system",
                        "metadata": meta,
                        "version": assistant.get("version"),
                    }
                )
        return found

    async def check_fresh(self, views: Mapping[str, Sequence[ThreadView]]) -> None:
        for graph_views in views.values():
            for view in graph_views:
                try:
                    state = await self.client.threads.get_state(view.thread_id)
                except NotFoundError:  # a thread only staging has is not a stale copy of a live one
                    continue
                live_head = (state.get("checkpoint") or {}).get("checkpoint_id")
                if live_head != view.head:
                    raise UsageError(
                        f"staging does not hold thread {view.thread_id}'s latest checkpoint (live {live_head}, staging "
                        f"{view.head}): the copy is older than the live state. `langgraph dev` may keep checkpoints in "
                        "memory until a graceful stop: stop it with Ctrl+C (SIGINT), start it again, and rerun"
                    )

    # -- writing -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def writing(self, compiled: Mapping[str, Any]) -> AsyncIterator[None]:
        yield  # update_state writes through the graph the server runs

    async def write_thread(self, outcome: ThreadOutcome, migration: str, values: dict[str, Any] | None) -> None:
        change = outcome.change
        assert change is not None and outcome.base is not None  # only "would change" outcomes get here
        try:
            now = await self.client.threads.get_state(outcome.thread_id)
        except NotFoundError:
            outcome.action, outcome.reason = "failed", "the thread is gone"
            return
        if (now.get("checkpoint") or {}).get("checkpoint_id") != outcome.base:
            outcome.action, outcome.reason = "skipped: moved on", "its head changed since it was read (a run?); run migrate again"
            return
        stamp = {"checkpoint_id": outcome.base, MIGRATION_KEY: migration, BASE_KEY: outcome.base}
        if change.move is not None:
            stamp[MOVED_KEY] = f"{change.move.from_node}->{change.move.to_node}"
        try:
            # ``checkpoint_id`` at the top level (older servers) is not in langgraph-sdk's ThreadUpdateStateResponse
            written: Mapping[str, Any] = await self.client.threads.update_state(
                outcome.thread_id,
                values,
                as_node=change.move.as_node if change.move is not None else None,
                checkpoint=stamp,  # type: ignore[arg-type]  # extra keys land in checkpoint metadata (see module doc)
            )
        except ConflictError as exc:
            outcome.action, outcome.reason = "skipped: busy", f"the server refused the update: {exc}"
            return
        except APIStatusError as exc:
            outcome.action, outcome.reason = "failed", f"the server refused the update ({exc.status_code}): {str(exc)[:300]}"
            return
        outcome.new_head = written.get("checkpoint_id") or (written.get("checkpoint") or {}).get("checkpoint_id")
        after = await self.client.threads.get_state(outcome.thread_id)
        landed = (after.get("metadata") or {}).get(MIGRATION_KEY) == migration
        if not landed or (after.get("checkpoint") or {}).get("checkpoint_id") != outcome.new_head:
            outcome.action, outcome.reason = "failed", "written, but the new head does not carry the migration stamp"
            return
        if change.move is not None and change.move.to_node not in (after.get("next") or []):
            outcome.action = "failed"
            outcome.reason = f"written, but the thread's next is {after.get('next')}, not {change.move.to_node!r}"
            return
        outcome.action = "changed"
        await self._stamp_state_written(outcome.thread_id)

    async def finish_thread(self, outcome: ThreadOutcome, migration: str, *, write: bool) -> str | None:
        """A write is the checkpoint, then the record's stamp (`_stamp_state_written`); a run stopped between
        the two leaves the record unstamped, and the gate would read the record's pre-repair values. The
        stamp is due when the record's ``MIGRATED_STATE_KEY`` is not its ``state_updated_at`` (nothing
        wrote the state since the migration's checkpoint, which is still the head)."""
        try:
            record = await self.client.threads.get(outcome.thread_id)
        except NotFoundError:
            return None
        at = record.get("state_updated_at")
        expected = str(at) if at else "unknown"
        if (record.get("metadata") or {}).get(MIGRATED_STATE_KEY) == expected:
            return None
        if not write:
            return (
                "its record still lacks the migration's stamp (an earlier --apply stopped after its checkpoint): "
                "--apply finishes it"
            )
        await self._stamp_state_written(outcome.thread_id)
        return "its record lacked the migration's stamp (an earlier --apply stopped after its checkpoint): stamped now"

    async def _stamp_state_written(self, thread_id: str) -> None:
        """Stamp the thread's metadata with its record's ``state_updated_at`` (`MIGRATED_STATE_KEY`):
        the record still holds the values the update started from, and the gate reads the state of a
        thread so stamped until its state is written again. A server that gives no ``state_updated_at``
        gets a stamp all the same (the gate then reads such a thread's state always)."""
        with contextlib.suppress(APIStatusError):
            record = await self.client.threads.get(thread_id)
            at = record.get("state_updated_at")  # newer servers' field
            await self.client.threads.update(thread_id, metadata={MIGRATED_STATE_KEY: str(at) if at else "unknown"})

    async def write_assistant(self, item: AssistantOutcome, migration: str) -> None:
        try:
            await self.client.assistants.update(
                item.assistant_id,
                context=item.after,
                metadata={CONTEXT_MIGRATION_KEY: migration, CONTEXT_BASE_KEY: item.base_version, ROLLED_BACK_KEY: None},
            )
        except APIStatusError as exc:
            item.action, item.reason = "failed", f"the server refused the update ({exc.status_code}): {str(exc)[:300]}"
            return
        item.action = "changed"

    # -- rollback ----------------------------------------------------------------------------------

    async def plan_rollback(self, migration: str, graph_id: str, views: Sequence[ThreadView]) -> list[ThreadOutcome]:
        outcomes = []
        for view in views:
            history = await self.client.threads.get_history(view.thread_id, limit=HISTORY_LIMIT)
            stamped = [i for i, state in enumerate(history) if stamped_by(state.get("metadata"), migration)]
            if not stamped:
                continue
            newest = history[stamped[0]]
            base_id = (newest.get("metadata") or {}).get(BASE_KEY) or _parent(newest)
            base = next((s for s in history if _id(s) == base_id), None)
            if base is None:
                base = await self.client.threads.get_state(view.thread_id, checkpoint_id=base_id)
            head = history[0]
            if stamped[0] == 0:
                action: Action = "skipped: busy" if view.status == "busy" else "would restore"
                outcomes.append(
                    ThreadOutcome(
                        thread_id=view.thread_id,
                        graph_id=graph_id,
                        status=view.status,
                        blocks=view.blocks,
                        action=action,
                        base=base_id,
                        reason="a run is in flight on it" if view.status == "busy" else "",
                    )
                )
            elif _is_copy_of(head, base):
                outcomes.append(
                    ThreadOutcome(
                        thread_id=view.thread_id,
                        graph_id=graph_id,
                        status=view.status,
                        blocks=view.blocks,
                        action="already restored",
                        base=base_id,
                        new_head=_id(head),
                    )
                )
            else:
                outcomes.append(
                    ThreadOutcome(
                        thread_id=view.thread_id,
                        graph_id=graph_id,
                        status=view.status,
                        blocks=view.blocks,
                        action="skipped: moved on",
                        base=base_id,
                        reason=f"{stamped[0]} checkpoint(s) were written after the migration: rolling back would drop them",
                    )
                )
        return outcomes

    async def restore_thread(self, outcome: ThreadOutcome, migration: str) -> None:
        try:
            # ``checkpoint_id`` at the top level: see write_thread
            written: Mapping[str, Any] = await self.client.threads.update_state(
                outcome.thread_id,
                None,
                as_node="__copy__",
                checkpoint={"checkpoint_id": outcome.base},  # type: ignore[arg-type]  # an id alone: langgraph-sdk's Checkpoint requires every key
            )
        except ConflictError as exc:
            outcome.action, outcome.reason = "skipped: busy", f"the server refused the update: {exc}"
            return
        except APIStatusError as exc:
            outcome.action, outcome.reason = "failed", f"the server refused the restore ({exc.status_code}): {str(exc)[:300]}"
            return
        outcome.new_head = written.get("checkpoint_id")
        after, base = await asyncio.gather(
            self.client.threads.get_state(outcome.thread_id),
            self.client.threads.get_state(outcome.thread_id, checkpoint_id=outcome.base),
        )
        if after.get("values") != base.get("values") or list(after.get("next") or []) != list(base.get("next") or []):
            outcome.action, outcome.reason = "failed", "the restored head's values or next differ from the pre-migration head's"
            return
        outcome.action = "restored"

    async def rollback_assistants(self, migration: str, graph_id: str) -> list[AssistantOutcome]:
        """(`assistants.set_latest` would be the natural undo, but on `langgraph dev` 0.16.7
        (runtime-inmem 0.36.7) it restores the version's config and metadata and keeps the newest
        context: observed, so the old context is written back instead.)"""
        outcomes = []
        pages: AsyncIterator[Sequence[Mapping[str, Any]]] = api.assistant_pages(self.client, graph_id)  # contexts: JSON objects
        async for page in pages:
            for assistant in page:
                meta = assistant.get("metadata") or {}
                assistant_id = assistant["assistant_id"]
                if meta.get(ROLLED_BACK_KEY) == migration and meta.get(CONTEXT_MIGRATION_KEY) is None:
                    outcomes.append(
                        AssistantOutcome(assistant_id, graph_id, "already restored", before=assistant.get("context") or {})
                    )
                    continue
                if meta.get(CONTEXT_MIGRATION_KEY) != migration or not isinstance(meta.get(CONTEXT_BASE_KEY), int):
                    continue
                item = AssistantOutcome(
                    assistant_id,
                    graph_id,
                    "restored",
                    before=assistant.get("context") or {},
                    base_version=meta[CONTEXT_BASE_KEY],
                )
                versions: Sequence[Mapping[str, Any]] = await self.client.assistants.get_versions(assistant_id, limit=100)
                base = next((v for v in versions if v.get("version") == meta[CONTEXT_BASE_KEY]), None)
                if base is None:
                    item.action, item.reason = "failed", f"version {meta[CONTEXT_BASE_KEY]} (before the migration) is gone"
                else:
                    try:
                        restored: Mapping[str, Any] = await self.client.assistants.update(
                            assistant_id,
                            context=base.get("context") or {},
                            metadata={CONTEXT_MIGRATION_KEY: None, CONTEXT_BASE_KEY: None, ROLLED_BACK_KEY: migration},
                        )
                        item.after = restored.get("context") or {}
                    except APIStatusError as exc:
                        item.action, item.reason = (
                            "failed",
                            f"the server refused the update ({exc.status_code}): {str(exc)[:300]}",
                        )
                outcomes.append(item)
        return outcomes

    # -- running (the proof on staging) -----------------------------------------------------------

    async def pending_state(self, thread_id: str) -> PendingState:
        state = await self.client.threads.get_state(thread_id, subgraphs=True)
        return PendingState(next=tuple(state.get("next") or ()), interrupts=tuple(pending_interrupts(state)))

    async def run_updates(self, thread_id: str, graph_id: str, *, command: Mapping[str, Any] | None = None) -> RunUpdates:
        how: dict[str, Any] = {"input": None} if command is None else {"command": dict(command)}
        ran: dict[str, list[Any]] = {}
        try:
            async for part in self.client.runs.stream(thread_id, graph_id, stream_mode="updates", stream_subgraphs=True, **how):
                if part.event == "error":
                    return ran, f"the run failed: {json.dumps(part.data, default=str)[:300]}"
                if part.event.startswith("updates") and isinstance(part.data, dict):
                    namespace = part.event.partition("|")[2]
                    prefix = ":".join(seg.split(":")[0] for seg in namespace.split("|") if seg)
                    for node, update in part.data.items():
                        ran.setdefault(f"{prefix}:{node}" if prefix else node, []).append(update)
        except APIStatusError as exc:
            return ran, f"the server refused the run ({exc.status_code}): {str(exc)[:300]}"
        return ran, None
