"""The Agent Server source's reads: a live Agent Server through langgraph-sdk only, never writing to it.

Threads are read page by page (`threads.search`, all statuses), and only the
threads with pending work (interrupted, busy, error, or any status with a pending
interrupt) cost a `get_state` call
(with subgraphs, so a pause inside a subgraph is seen at its full path). Those
calls run concurrently, bounded by a semaphore.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIError, APIStatusError, NotFoundError
from langgraph_sdk.schema import Assistant

from migrations_playbook.errors import LiveUnreachable
from migrations_playbook.model import PAUSED_STATUSES, LiveGraph, TaskFact, ThreadSnapshot, Topology

PAGE_SIZE = 500
STATE_CONCURRENCY = 16
CONTRACT_ROUTE = "/playbook/contract"
"""Optional route a deployment may serve with its own contract locks (this repo's does)."""

Progress = Callable[[str, int, int], None]
"""``progress(graph_id, threads_done, threads_total)``."""


def connect(url: str, headers: Mapping[str, str] | None = None) -> LangGraphClient:
    # (connect, read, write, pool) seconds: httpx.Timeout(60.0, connect=5.0) as the tuple langgraph-sdk's types accept
    return get_client(url=url, headers=dict(headers or {}), timeout=(5.0, 60.0, 60.0, 60.0))


async def ensure_reachable(client: LangGraphClient, url: str) -> None:
    try:
        await client.http.get("/ok")
    except (httpx.TransportError, OSError) as exc:
        raise LiveUnreachable(f"live server {url} is unreachable: {type(exc).__name__}: {exc}") from exc
    except APIError as exc:
        raise LiveUnreachable(f"live server {url} answered /ok with an error: {exc}") from exc


async def live_graph_ids(client: LangGraphClient) -> dict[str, str]:
    """graph id -> assistant id used to read its topology (the system assistant when present)."""
    chosen: dict[str, Assistant] = {}
    offset = 0
    while True:
        page = await client.assistants.search(limit=100, offset=offset)
        for assistant in page:
            graph_id = assistant["graph_id"]
            system = (assistant.get("metadata") or {}).get("created_by") == "system"
            if graph_id not in chosen or system:
                chosen[graph_id] = assistant
        if len(page) < 100:
            break
        offset += len(page)
    return {graph_id: a["assistant_id"] for graph_id, a in chosen.items()}


async def live_topology(client: LangGraphClient, assistant_id: str) -> Topology:
    plain, xray = await asyncio.gather(
        client.assistants.get_graph(assistant_id),
        client.assistants.get_graph(assistant_id, xray=True),
    )
    return Topology.from_drawings(plain, xray)


async def served_locks(client: LangGraphClient) -> dict[str, dict[str, Any]] | None:
    """The deployment's own contract locks, when it serves them; None otherwise."""
    try:
        served = await client.http.get(CONTRACT_ROUTE)
    except (NotFoundError, APIError, httpx.HTTPError, ValueError):
        return None
    if isinstance(served, dict) and isinstance(served.get("graphs"), dict):
        graphs: dict[str, dict[str, Any]] = served["graphs"]
        return graphs
    return None


def reducers_from_lock(lock: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not lock:
        return None
    return {name: spec["reducer"] for name, spec in lock.get("fields", {}).items()}


async def live_graphs(
    client: LangGraphClient,
    graph_ids: Mapping[str, str],
    locks: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, LiveGraph]:
    topologies = await asyncio.gather(*(live_topology(client, aid) for aid in graph_ids.values()))
    return {
        graph_id: LiveGraph(
            graph_id=graph_id,
            topology=topology,
            reducers=reducers_from_lock((locks or {}).get(graph_id)),
            lock=dict(locks[graph_id]) if locks and graph_id in locks else None,
        )
        for graph_id, topology in zip(graph_ids, topologies, strict=True)
    }


async def iter_assistants(client: LangGraphClient, graph_id: str) -> AsyncIterator[dict[str, Any]]:
    """Every assistant of ``graph_id`` with its stored context (the system one included)."""
    offset = 0
    while True:
        page = await client.assistants.search(graph_id=graph_id, limit=100, offset=offset)
        for assistant in page:
            yield {
                "assistant_id": assistant["assistant_id"],
                "context": assistant.get("context") or {},
                "system": (assistant.get("metadata") or {}).get("created_by") == "system",
            }
        if len(page) < 100:
            break
        offset += len(page)


def task_facts(state: Mapping[str, Any], prefix: str = "") -> tuple[list[TaskFact], dict[str, dict[str, Any]]]:
    """The tasks of a state (nested through subgraph states) and the subgraph values by path."""
    facts: list[TaskFact] = []
    namespaces: dict[str, dict[str, Any]] = {}
    for task in state.get("tasks") or []:
        path = prefix + task["name"]
        interrupts = tuple(i.get("value") for i in task.get("interrupts") or [] if isinstance(i, Mapping))
        raw_path: Sequence[Any] = task.get("path") or ()
        facts.append(
            TaskFact(
                path=path,
                interrupted=bool(task.get("interrupts")),
                finished=task.get("result") is not None and not task.get("interrupts") and not task.get("error"),
                errored=bool(task.get("error")),
                push=bool(raw_path) and raw_path[0] == "__pregel_push",
                result=task.get("result") if isinstance(task.get("result"), dict) else None,
                interrupt_values=interrupts,
            )
        )
        nested = task.get("state")
        if isinstance(nested, Mapping) and "values" in nested:
            if isinstance(nested.get("values"), dict):
                namespaces[path] = nested["values"]
            inner, inner_ns = task_facts(nested, path + ":")
            facts.extend(inner)
            namespaces.update(inner_ns)
    return facts, namespaces


def task_ids(state: Mapping[str, Any]) -> set[str]:
    """Ids of the tasks a state reports, nested through subgraph states."""
    ids: set[str] = set()
    for task in state.get("tasks") or []:
        ids.add(str(task.get("id")))
        nested = task.get("state")
        if isinstance(nested, Mapping):
            ids |= task_ids(nested)
    return ids


LOST_STEP = "(a step the serving code no longer has)"
"""The name of a lost step when no lock names the node it was raised in."""


def gone_interrupt_nodes(lock: Mapping[str, Any] | None, nodes: Collection[str]) -> list[str]:
    """The live lock's interrupting root nodes that ``nodes`` (the serving code's) lacks."""
    return sorted(n for n in (lock or {}).get("interrupt_nodes") or [] if ":" not in n and n not in nodes)


def lost_steps(thread: Mapping[str, Any], state: Mapping[str, Any], gone: Sequence[str]) -> list[str]:
    """Names for the paused steps the serving code no longer schedules.

    A server derives a thread's ``next`` and tasks with the code it runs: after a rollout a
    thread paused in a node the new code lacks (a renamed node) shows nothing pending. Its
    own record (``threads.search``'s ``interrupts``, written by the code that paused it, keyed
    by task id) still names the tasks that paused it; one whose task the state does not have
    is a lost step, named after ``gone`` (`gone_interrupt_nodes`) when that is known."""
    recorded = {str(task_id) for task_id, items in (thread.get("interrupts") or {}).items() if items}
    if not recorded or recorded <= task_ids(state):
        return []
    return list(gone) or [LOST_STEP]


async def ran_nodes(client: LangGraphClient, thread_id: str, limit: int = 1000) -> frozenset[str]:
    """Every node that was scheduled in the thread's history (its ``branch:to:`` channels exist)."""
    history = await client.threads.get_history(thread_id, limit=limit)
    names: set[str] = set()
    for state in history:
        names.update(state.get("next") or [])
        names.update(task["name"] for task in state.get("tasks") or [])
    return frozenset(names)


def at_breakpoint(status: str, state: Mapping[str, Any]) -> bool:
    """Stopped by a compiled interrupt_before/after: interrupted with work pending, no interrupt() raised."""
    if status != "interrupted" or not state.get("next"):
        return False
    facts, _ = task_facts(state)
    return not any(f.interrupted for f in facts)


def pending_paths(state: Mapping[str, Any], prefix: str = "") -> tuple[str, ...]:
    """Node paths a thread runs next: `next`, pending tasks, and inside subgraph states."""
    paths: list[str] = [prefix + name for name in state.get("next") or []]
    for task in state.get("tasks") or []:
        path = prefix + task["name"]
        paths.append(path)
        nested = task.get("state")
        if isinstance(nested, Mapping) and "next" in nested:
            paths.extend(pending_paths(nested, path + ":"))
    return tuple(dict.fromkeys(paths))


async def iter_threads(
    client: LangGraphClient,
    graph_id: str,
    *,
    page_size: int = PAGE_SIZE,
    concurrency: int = STATE_CONCURRENCY,
    progress: Progress | None = None,
    live: LiveGraph | None = None,
) -> AsyncIterator[ThreadSnapshot]:
    """Every thread of ``graph_id`` (all statuses), as snapshots, page by page.

    With ``live`` (the served topology and the live lock), a thread whose record holds an
    interrupt the serving code no longer schedules gets that step as an interrupted task
    (`lost_steps`): the gate run after a rollout, on a server already serving the candidate,
    still sees the thread paused in the node the candidate lacks."""
    gone = gone_interrupt_nodes(live.lock, live.topology.nodes) if live and live.topology else []
    total = await client.threads.count(metadata={"graph_id": graph_id})
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def snapshot(thread: Mapping[str, Any]) -> ThreadSnapshot:
        values = thread.get("values") if isinstance(thread.get("values"), dict) else {}
        facts: dict[str, Any] = {}
        # An idle thread can still hold a pending interrupt (langgraph dev reports a thread
        # idle after a queued resume on it is cancelled): read its state too.
        if thread["status"] in PAUSED_STATUSES or thread.get("interrupts"):
            async with semaphore:
                try:
                    state = await client.threads.get_state(thread["thread_id"], subgraphs=True)
                except NotFoundError:
                    state = None
                except APIStatusError as exc:
                    if exc.status_code in (401, 403):
                        raise  # the token may not read threads: the whole scan is refused
                    # 5xx, or a 4xx on one thread (the server's code cannot build its state)
                    state = None
                    facts["unreadable"] = f"{exc.status_code}: {exc.message}"
                if state is not None and at_breakpoint(thread["status"], state):
                    with contextlib.suppress(APIError):
                        facts["ran"] = await ran_nodes(client, thread["thread_id"])
            if state is not None:
                tasks, namespaces = task_facts(state)
                lost = lost_steps(thread, state, gone) if live is not None else []
                tasks += [TaskFact(path=name, interrupted=True) for name in lost]
                facts.update(
                    pending=(*pending_paths(state), *lost),
                    tasks=tuple(tasks),
                    namespaces=namespaces,
                    next=tuple(state.get("next") or ()),
                )
                values = state.get("values") if isinstance(state.get("values"), dict) else values
        return ThreadSnapshot(
            thread_id=thread["thread_id"],
            graph_id=graph_id,
            status=thread["status"],
            values=values or {},
            assistant_id=(thread.get("metadata") or {}).get("assistant_id"),
            **facts,
        )

    offset = 0
    while True:
        page = await client.threads.search(
            metadata={"graph_id": graph_id},
            limit=page_size,
            offset=offset,
            sort_by="created_at",
            sort_order="asc",
            select=["thread_id", "status", "values", "interrupts", "metadata"],
        )
        for item in await asyncio.gather(*(snapshot(t) for t in page)):
            done += 1
            yield item
        if progress:
            progress(graph_id, done, max(total, done))
        if len(page) < page_size:
            break
        offset += len(page)
