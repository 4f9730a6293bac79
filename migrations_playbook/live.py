"""Inspect: read a live Agent Server through langgraph-sdk only, never writing to it.

Threads are read page by page (`threads.search`, all statuses), and only the
threads with pending work (interrupted, busy, error, or any status with a pending
interrupt) cost a `get_state` call
(with subgraphs, so a pause inside a subgraph is seen at its full path). Those
calls run concurrently, bounded by a semaphore.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIError, NotFoundError

from migrations_playbook.model import PAUSED_STATUSES, LiveGraph, ThreadSnapshot, Topology

PAGE_SIZE = 500
STATE_CONCURRENCY = 16
CONTRACT_ROUTE = "/playbook/contract"
"""Optional route a deployment may serve with its own contract locks (this repo's does)."""

Progress = Callable[[str, int, int], None]
"""``progress(graph_id, threads_done, threads_total)``."""


class LiveUnreachable(Exception):
    """The live server did not answer."""


def connect(url: str, headers: Mapping[str, str] | None = None) -> LangGraphClient:
    return get_client(url=url, headers=dict(headers or {}), timeout=httpx.Timeout(60.0, connect=5.0))


async def ensure_reachable(client: LangGraphClient, url: str) -> None:
    try:
        await client.http.get("/ok")
    except (httpx.TransportError, OSError) as exc:
        raise LiveUnreachable(f"live server {url} is unreachable: {type(exc).__name__}: {exc}") from exc
    except APIError as exc:
        raise LiveUnreachable(f"live server {url} answered /ok with an error: {exc}") from exc


async def live_graph_ids(client: LangGraphClient) -> dict[str, str]:
    """graph id -> assistant id used to read its topology (the system assistant when present)."""
    chosen: dict[str, dict[str, Any]] = {}
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


def read_locks(path: Path) -> dict[str, dict[str, Any]]:
    """Contract locks from a folder of ``<graph_id>.json`` files (or one such file)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    locks: dict[str, dict[str, Any]] = {}
    for file in files:
        lock = json.loads(file.read_text())
        locks[lock["graph_id"]] = lock
    return locks


async def served_locks(client: LangGraphClient) -> dict[str, dict[str, Any]] | None:
    """The deployment's own contract locks, when it serves them; None otherwise."""
    try:
        served = await client.http.get(CONTRACT_ROUTE)
    except (NotFoundError, APIError, httpx.HTTPError, ValueError):
        return None
    if isinstance(served, dict) and isinstance(served.get("graphs"), dict):
        return served["graphs"]
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
        )
        for graph_id, topology in zip(graph_ids, topologies, strict=True)
    }


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
) -> AsyncIterator[ThreadSnapshot]:
    """Every thread of ``graph_id`` (all statuses), as snapshots, page by page."""
    total = await client.threads.count(metadata={"graph_id": graph_id})
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def snapshot(thread: Mapping[str, Any]) -> ThreadSnapshot:
        values = thread.get("values") if isinstance(thread.get("values"), dict) else {}
        pending: tuple[str, ...] = ()
        # An idle thread can still hold a pending interrupt (langgraph dev reports a thread
        # idle after a queued resume on it is cancelled): read its state too.
        if thread["status"] in PAUSED_STATUSES or thread.get("interrupts"):
            async with semaphore:
                try:
                    state = await client.threads.get_state(thread["thread_id"], subgraphs=True)
                except NotFoundError:
                    state = None
            if state is not None:
                pending = pending_paths(state)
                values = state.get("values") if isinstance(state.get("values"), dict) else values
        return ThreadSnapshot(
            thread_id=thread["thread_id"],
            graph_id=graph_id,
            status=thread["status"],
            values=values or {},
            pending=pending,
        )

    offset = 0
    while True:
        page = await client.threads.search(
            metadata={"graph_id": graph_id},
            limit=page_size,
            offset=offset,
            sort_by="created_at",
            sort_order="asc",
            select=["thread_id", "status", "values", "interrupts"],
        )
        for item in await asyncio.gather(*(snapshot(t) for t in page)):
            done += 1
            yield item
        if progress:
            progress(graph_id, done, max(total, done))
        if len(page) < page_size:
            break
        offset += len(page)
