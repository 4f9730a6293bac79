"""Migrate's reads of an Agent Server: every thread of a graph as a `ThreadView`.

`threads.search`, then `get_state(subgraphs=True)` for each one, so a thread waiting at a node
without an interrupt is seen too. What a server running the candidate hides, migrate reads from
the thread record instead: the candidate derives `get_state` itself, so a thread paused at a node
it no longer has shows ``next == []`` and no task, and values of keys it no longer declares are
not shown; Agent Server's thread record (`threads.search`) still holds both from the thread's
last run: the interrupts it waits on (keyed by the old task id) and the values as they were. A lost
step is an interrupt raised in a node the candidate no longer has, matched by node
(`state.lost_steps`, the one the gate and the runtime guard use too): a node the candidate has and
schedules again under a new task id (after a value-only repair) is not lost. It is named from the
live code's lock (``--live-contract``: its ``interrupt_nodes`` the candidate lacks). A record a
migration's `update_state` left behind (`state.record_is_stale`) is not read for hidden values.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError, NotFoundError

from migrations_playbook.model import CandidateGraph, TaskFact, ThreadSnapshot
from migrations_playbook.sources.api import reads as live_side
from migrations_playbook.sources.api.state import lost_steps, pending_paths, record_is_stale, task_facts
from migrations_playbook.sources.interrupts import pending_interrupts
from migrations_playbook.sources.repair_model import Served, ThreadView

STATE_CONCURRENCY = 16


async def _states(client: LangGraphClient, threads: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    semaphore = asyncio.Semaphore(STATE_CONCURRENCY)

    async def one(thread: Mapping[str, Any]) -> Mapping[str, Any] | None:
        async with semaphore:
            try:
                return await client.threads.get_state(thread["thread_id"], subgraphs=True)
            except NotFoundError:
                return None
            except APIStatusError as exc:
                if exc.status_code < 500:
                    raise
                return {"__unreadable__": f"{exc.status_code}: {exc.message}"}

    return list(await asyncio.gather(*(one(t) for t in threads)))


async def read_threads(
    client: LangGraphClient,
    graph_id: str,
    *,
    served: Served,
    candidate: CandidateGraph,
    lock: Mapping[str, Any] | None,
    moved_from: Sequence[str] = (),
) -> list[ThreadView]:
    """Every thread of ``graph_id`` as a `ThreadView` (all statuses, oldest first)."""
    records: list[Mapping[str, Any]] = []
    async for page in live_side.thread_pages(client, graph_id):
        records.extend(page)
    views = []
    for record, state in zip(records, await _states(client, records), strict=True):
        views.append(_view(record, state, graph_id, served=served, candidate=candidate, lock=lock, moved_from=moved_from))
    return views


def _view(
    record: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    graph_id: str,
    *,
    served: Served,
    candidate: CandidateGraph,
    lock: Mapping[str, Any] | None,
    moved_from: Sequence[str],
) -> ThreadView:
    thread_id = str(record["thread_id"])
    status = str(record.get("status") or "idle")
    assistant_id = (record.get("metadata") or {}).get("assistant_id")
    stored_values = record.get("values")
    record_values: dict[str, Any] = stored_values if isinstance(stored_values, dict) else {}
    if state is None or "__unreadable__" in (state or {}):
        unreadable = (state or {}).get("__unreadable__") if state else None
        snapshot = ThreadSnapshot(
            thread_id=thread_id,
            graph_id=graph_id,
            status=status,
            values=dict(record_values),
            unreadable=unreadable,
            assistant_id=assistant_id,
        )
        return ThreadView(
            thread_id, graph_id, status, dict(record_values), None, {}, (), (), (), snapshot, assistant_id=assistant_id
        )
    values = dict(state.get("values") or {}) if isinstance(state.get("values"), dict) else {}
    tasks, namespaces = task_facts(state)
    pending = list(pending_paths(state))
    interrupts = list(pending_interrupts(state))
    lost: list[str] = []
    hidden: list[str] = []
    if served == "candidate":
        # The candidate derived this state: what it no longer has, only the thread record shows.
        for interrupt in lost_steps(record, state, lock=lock, nodes=candidate.topology.nodes, moved_from=moved_from):
            if interrupt.path not in lost:
                lost.append(interrupt.path)
                tasks.append(TaskFact(path=interrupt.path, interrupted=True, interrupt_values=(interrupt.value,)))
            interrupts.append(interrupt)
        pending += [n for n in lost if n not in pending]
        shared = set(values) & set(record_values)
        # the record is this head's (not one a migration's update_state left behind)
        if not record_is_stale(record) and all(values[k] == record_values[k] for k in shared):
            for key, value in record_values.items():
                if key not in values and key not in candidate.fields:
                    values[key] = value
                    hidden.append(key)
    snapshot = ThreadSnapshot(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        values=values,
        pending=tuple(pending),
        tasks=tuple(tasks),
        namespaces=namespaces,
        next=tuple(state.get("next") or ()),
        assistant_id=assistant_id,
    )
    checkpoint = state.get("checkpoint") or {}
    return ThreadView(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        values=values,
        head=checkpoint.get("checkpoint_id"),
        metadata=dict(state.get("metadata") or {}),
        next=tuple(state.get("next") or ()),
        pending=tuple(pending),
        interrupts=tuple(interrupts),
        snapshot=snapshot,
        lost=tuple(lost),
        hidden=tuple(hidden),
        assistant_id=assistant_id,
    )
