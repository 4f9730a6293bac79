"""The Agent Server source's reads: a live Agent Server through langgraph-sdk only, never writing to it.

Threads are read page by page (`threads.search`, all statuses, oldest first: `STABLE_ORDER`; each
page must bring threads not seen before, `paging.py`), and only the threads with pending work
(interrupted, busy, error, or any status with a pending interrupt) cost a `get_state` call
(with subgraphs, so a pause inside a subgraph is seen at its full path). Those
calls run concurrently, bounded by a semaphore. What a state and a record say
(tasks, pending paths, lost steps, a stale record) is `state.py`'s, pure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from weakref import WeakKeyDictionary

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIError, APIStatusError, NotFoundError
from langgraph_sdk.schema import Assistant

from migrations_playbook.errors import BadAnswer, LiveUnreachable
from migrations_playbook.jsonschema_types import output_types_of
from migrations_playbook.model import (
    CONTRACT_STAMP,
    PAUSED_STATUSES,
    LiveGraph,
    TaskFact,
    ThreadSnapshot,
    Topology,
)
from migrations_playbook.sources.api import answers
from migrations_playbook.sources.api.paging import PageProgress, offset_pages, server_of
from migrations_playbook.sources.api.state import (
    at_breakpoint,
    lost_nodes,
    lost_steps,
    pending_paths,
    record_is_stale,
    task_facts,
)
from migrations_playbook.sources.budget import Deadline

PAGE_SIZE = 500
STATE_CONCURRENCY = 16
CONTRACT_ROUTE = "/playbook/contract"
"""Optional route a deployment may serve with its own contract locks (this repo's does)."""

Progress = Callable[[str, int, int], None]
"""``progress(graph_id, threads_done, threads_total)``."""


KEEPALIVE_SECONDS = 1.0
"""How long an idle connection is kept for reuse. httpx keeps one 5 s, exactly as long as the server's
uvicorn does (``timeout_keep_alive=5``): a request sent on a connection the server is closing at that
moment fails with ``ReadError`` (seen here under load as "live server stopped answering"). Well under
the server's, a kept connection is never one the server is about to close."""


def connect(url: str, headers: Mapping[str, str] | None = None, *, deadline: Deadline | None = None) -> LangGraphClient:
    """A langgraph-sdk client for ``url`` whose idle connections expire before the server's do, every
    request within ``deadline`` (the command's)."""
    # (connect, read, write, pool) seconds: httpx.Timeout(60.0, connect=5.0) as the tuple langgraph-sdk's types accept;
    # a read timeout bounds one read, not an answer: the deadline bounds the whole (`sources/budget.py`)
    client = get_client(url=url, headers=dict(headers or {}), timeout=(5.0, 60.0, 60.0, 60.0))
    return short_keepalive(client, deadline=deadline)


def short_keepalive(client: LangGraphClient, *, deadline: Deadline | None = None) -> LangGraphClient:
    """``client`` with its HTTP transport's idle connections kept `KEEPALIVE_SECONDS` (connect retries as
    langgraph-sdk sets them; an in-process (ASGI) transport is left as it is), every answer checked
    before it is read (`answers.checked`: a body that is not the route's JSON is a `BadAnswer`, exit 3),
    and every request within ``deadline`` (`OutOfTime`, exit 3). Every client the playbook opens on a
    server comes from here (`connect`, the shadow's sides)."""
    http = client.http.client
    if isinstance(http._transport, httpx.AsyncHTTPTransport):
        http._transport = httpx.AsyncHTTPTransport(retries=5, limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))
    return answers.checked(client, deadline)


MISSING_ROUTE = frozenset({404, 405, 501})
"""Statuses that say a route is not there (not found, method not allowed, not implemented)."""

REFUSED_BODY = frozenset({400, 422})
"""Statuses that say a request body was not understood (``select`` on a server that does not take it)."""


@dataclass
class Routes:
    """Which optional routes a server lacks, as found while reading it (an open Agent Protocol server may
    lack `/ok`, `/threads/count` or ``select`` projections; Agent Server has all three). The reads fall
    back where they can, and `notes` names each missing route for the report."""

    ok: int | None = None
    """The status ``GET /ok`` answered when the server has no such route."""
    count: int | None = None
    """The status ``POST /threads/count`` answered when the server has no such route."""
    select: Literal["full", "basic", "none"] = "full"
    """``threads.search``'s ``select``: every field asked (full), without ``state_updated_at`` (basic), none."""
    select_status: int | None = None

    def notes(self) -> list[str]:
        found = []
        if self.ok is not None:
            found.append(f"the server has no GET /ok ({self.ok}): whether it answers was checked with POST /assistants/search")
        if self.count is not None:
            found.append(
                f"the server has no POST /threads/count ({self.count}): threads were counted by paging POST /threads/search"
            )
        if self.select == "none":
            found.append(
                f"the server refuses `select` in POST /threads/search ({self.select_status}): whole thread objects were read"
            )
        return found

    def projection(self, select: Sequence[str]) -> list[str] | None:
        """``select`` as this server takes it (None: no projection at all)."""
        if self.select == "none":
            return None
        if self.select == "basic":
            return [field for field in select if field != "state_updated_at"]
        return list(select)

    def refused(self, asked: Sequence[str], status: int) -> None:
        """The server refused ``asked`` as a projection: ask less next time."""
        self.select_status = status
        self.select = "basic" if self.select == "full" and "state_updated_at" in asked else "none"


_ROUTES: WeakKeyDictionary[LangGraphClient, Routes] = WeakKeyDictionary()


def routes(client: LangGraphClient) -> Routes:
    """What ``client``'s server was found to lack so far."""
    found = _ROUTES.get(client)
    if found is None:
        found = _ROUTES[client] = Routes()
    return found


async def ensure_reachable(client: LangGraphClient, url: str) -> None:
    """The server answers. A server without ``GET /ok`` (404, 405, 501) is asked ``POST /assistants/search``
    instead (`Routes.ok`); a request it refuses there is the command's usage error, as any refusal."""
    try:
        await client.http.get("/ok")
    except (httpx.TransportError, OSError) as exc:
        raise LiveUnreachable(f"live server {url} is unreachable (GET /ok): {type(exc).__name__}: {exc}") from exc
    except APIStatusError as exc:
        if exc.status_code not in MISSING_ROUTE:
            raise LiveUnreachable(f"live server {url} answered /ok with an error: {exc}") from exc
        routes(client).ok = exc.status_code
        try:
            await client.assistants.search(limit=1)
        except (httpx.TransportError, OSError) as inner:
            raise LiveUnreachable(f"live server {url} is unreachable: {type(inner).__name__}: {inner}") from inner
    except APIError as exc:
        raise LiveUnreachable(f"live server {url} answered /ok with an error: {exc}") from exc


ASSISTANT_PAGE = 100
"""Assistants per ``assistants.search`` page."""


def assistant_pages(client: LangGraphClient, graph_id: str | None = None) -> AsyncIterator[Sequence[Assistant]]:
    """Every page of ``assistants.search`` (of ``graph_id``, else of every graph), each one checked to advance."""

    async def fetch(offset: int) -> Sequence[Assistant]:
        if graph_id is None:
            return await client.assistants.search(limit=ASSISTANT_PAGE, offset=offset)
        return await client.assistants.search(graph_id=graph_id, limit=ASSISTANT_PAGE, offset=offset)

    progress = PageProgress(server_of(client), "POST /assistants/search", "assistants")
    return offset_pages(fetch, size=ASSISTANT_PAGE, key=lambda a: str(a["assistant_id"]), progress=progress)


async def live_graph_ids(client: LangGraphClient) -> dict[str, str]:
    """graph id -> assistant id used to read its topology (the system assistant when present)."""
    chosen: dict[str, Assistant] = {}
    async for page in assistant_pages(client):
        for assistant in page:
            graph_id = assistant["graph_id"]
            system = (assistant.get("metadata") or {}).get("created_by") == "system"
            if graph_id not in chosen or system:
                chosen[graph_id] = assistant
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
    except (NotFoundError, APIError, httpx.HTTPError, ValueError, BadAnswer):  # not JSON: a route it does not serve
        return None
    if isinstance(served, dict) and isinstance(served.get("graphs"), dict):
        graphs: dict[str, dict[str, Any]] = served["graphs"]
        return graphs
    return None


STAMP_SAMPLE = 20
"""Threads per graph whose stamps `contract_stamps` reads (the most recently updated)."""


async def contract_stamps(client: LangGraphClient, graph_id: str) -> set[str]:
    """The contract hashes the runtime guard stamped on ``graph_id``'s most recently updated threads
    (thread metadata, else the latest checkpoint's): which code last ran them (empty: nothing stamped)."""
    try:
        threads = await client.threads.search(
            metadata={"graph_id": graph_id}, limit=STAMP_SAMPLE, sort_by="updated_at", sort_order="desc"
        )
    except (APIError, httpx.HTTPError, ValueError):
        return set()
    stamps: set[str] = set()
    for thread in threads:
        stamp = (thread.get("metadata") or {}).get(CONTRACT_STAMP)
        if not stamp:
            try:
                state = await client.threads.get_state(thread["thread_id"])
            except (APIError, httpx.HTTPError, ValueError):
                continue
            stamp = (state.get("metadata") or {}).get(CONTRACT_STAMP)
        if isinstance(stamp, str) and stamp:
            stamps.add(stamp)
    return stamps


def reducers_from_lock(lock: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not lock:
        return None
    return {name: spec["reducer"] for name, spec in lock.get("fields", {}).items()}


def keys_of_schemas(schemas: Mapping[str, Any]) -> frozenset[str] | None:
    """Every key a (sub)graph's state can hold, from the JSON schemas the server serves for it
    (`properties` of its state, input and output schemas); None when they do not show keys: no
    state schema, or one without properties (a Functional API entrypoint, a ``__root__`` state)."""
    state = schemas.get("state_schema")
    if not isinstance(state, Mapping) or not isinstance(state.get("properties"), Mapping):
        return None
    found: set[str] = set()
    for part in ("state_schema", "input_schema", "output_schema"):
        schema = schemas.get(part)
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(properties, Mapping):
            found |= {str(key) for key in properties}
    if not found or "__root__" in found:
        return None
    return frozenset(found)


LiveSchemas = tuple[dict[str, frozenset[str]] | None, dict[str, frozenset[str]] | None]
"""(`LiveGraph.schema_keys`, `LiveGraph.output_types`)."""


async def live_schema_keys(client: LangGraphClient, assistant_id: str) -> LiveSchemas:
    """Level prefix (``""``, ``review``, ``review:inner``) -> the keys its live state can hold
    (`keys_of_schemas`), from `get_schemas` and `get_subgraphs(recurse=True)`, read concurrently,
    and the keys the graph's runs return with their types (`output_types_of`). None when the server does not serve the
    graph's schemas; a subgraph level is left out when its schemas are not shown (unknown, not empty)."""
    root, subgraphs = await asyncio.gather(
        client.assistants.get_schemas(assistant_id),
        client.assistants.get_subgraphs(assistant_id, recurse=True),
        return_exceptions=True,
    )
    if isinstance(root, BaseException):
        if isinstance(root, (APIError, httpx.HTTPError, ValueError)):
            return None, None
        raise root
    found: dict[str, frozenset[str]] = {}
    keys = keys_of_schemas(root) if isinstance(root, Mapping) else None
    if keys is not None:
        found[""] = keys
    if isinstance(subgraphs, BaseException):
        if not isinstance(subgraphs, (APIError, httpx.HTTPError, ValueError)):
            raise subgraphs
    elif isinstance(subgraphs, Mapping):
        for namespace, schemas in subgraphs.items():
            keys = keys_of_schemas(schemas) if isinstance(schemas, Mapping) else None
            if keys is not None:
                found[str(namespace).replace("|", ":")] = keys  # langgraph's NS_SEP -> the gate's level prefix
    return found, output_types_of(root.get("output_schema")) if isinstance(root, Mapping) else None


async def live_graphs(
    client: LangGraphClient,
    graph_ids: Mapping[str, str],
    locks: Mapping[str, Mapping[str, Any]] | None,
    *,
    schemas: bool = True,
) -> dict[str, LiveGraph]:
    """The live side of each graph: its topology, and (``schemas``) the keys its state schemas
    name (`LiveGraph.schema_keys`), every read concurrent."""
    aids = list(graph_ids.values())
    reads = asyncio.gather(
        asyncio.gather(*(live_topology(client, aid) for aid in aids)),
        asyncio.gather(*(live_schema_keys(client, aid) if schemas else _none() for aid in aids)),
    )
    topologies, schema_keys = await reads
    return {
        graph_id: LiveGraph(
            graph_id=graph_id,
            topology=topology,
            reducers=reducers_from_lock((locks or {}).get(graph_id)),
            lock=dict(locks[graph_id]) if locks and graph_id in locks else None,
            schema_keys=keys,
            output_types=output_types,
        )
        for graph_id, topology, (keys, output_types) in zip(graph_ids, topologies, schema_keys, strict=True)
    }


async def _none() -> LiveSchemas:
    return None, None


async def iter_assistants(client: LangGraphClient, graph_id: str) -> AsyncIterator[dict[str, Any]]:
    """Every assistant of ``graph_id`` with its stored context (the system one included)."""
    async for page in assistant_pages(client, graph_id):
        for assistant in page:
            yield {
                "assistant_id": assistant["assistant_id"],
                "context": assistant.get("context") or {},
                "system": (assistant.get("metadata") or {}).get("created_by") == "system",
            }


async def ran_nodes(client: LangGraphClient, thread_id: str, limit: int = 1000) -> frozenset[str]:
    """Every node that was scheduled in the thread's history (its ``branch:to:`` channels exist)."""
    history = await client.threads.get_history(thread_id, limit=limit)
    names: set[str] = set()
    for state in history:
        names.update(state.get("next") or [])
        names.update(task["name"] for task in state.get("tasks") or [])
    return frozenset(names)


STABLE_ORDER: dict[str, Any] = {"sort_by": "created_at", "sort_order": "asc"}
"""How every paged ``threads.search`` is sorted: oldest first, an order a run on the live server does not change
(the server's default, newest update first, moves each thread a run touches to the front, and the pages after
it back), so a page brings the same threads again only from a server that ignores the offset."""

THREAD_SELECT = ["thread_id", "status", "values", "interrupts", "metadata", "state_updated_at"]
"""What `thread_pages` asks for; ``state_updated_at`` tells a stale record (`record_is_stale`)."""


async def search_page(
    client: LangGraphClient, *, limit: int, offset: int, select: Sequence[str], **filters: Any
) -> list[dict[str, Any]]:
    """One page of ``threads.search`` (``filters``: metadata, status, sort), projected to ``select`` where the
    server takes projections. A server that refuses one (400, 422) is asked with less (without
    ``state_updated_at``, then without ``select``), and remembered (`Routes.select`) for the pages after."""
    support = routes(client)
    while True:
        projection = support.projection(select)
        try:
            page = await client.threads.search(limit=limit, offset=offset, select=projection, **filters)  # type: ignore[arg-type]
        except APIStatusError as exc:
            if exc.status_code not in REFUSED_BODY or projection is None:
                raise
            support.refused(projection, exc.status_code)
            continue
        records = [dict(t) for t in page]
        asked = {"status"} & set(select)  # what the readers index; the rest they read with .get
        answers.require_fields(str(client.http.client.base_url).rstrip("/"), "POST /threads/search", records, asked)
        return records


def search_pages(
    client: LangGraphClient, *, size: int, select: Sequence[str], **filters: Any
) -> AsyncIterator[Sequence[dict[str, Any]]]:
    """Every page of ``threads.search`` (`search_page`, ``size`` threads a page), each one checked to advance."""

    async def fetch(offset: int) -> list[dict[str, Any]]:
        return await search_page(client, limit=size, offset=offset, select=select, **filters)

    progress = PageProgress(server_of(client), "POST /threads/search", "threads")
    return offset_pages(fetch, size=size, key=lambda t: str(t["thread_id"]), progress=progress)


def thread_pages(client: LangGraphClient, graph_id: str, *, size: int = PAGE_SIZE) -> AsyncIterator[Sequence[dict[str, Any]]]:
    """Every page of ``graph_id``'s thread records, oldest first (the gate's and migrate's reads), each one
    checked to advance.

    A server that does not know ``state_updated_at`` as a select field (422) is asked without it;
    its stamped threads then count as stale (`record_is_stale`). One that takes no ``select`` at all
    gives whole thread objects (`search_page`)."""
    return search_pages(client, size=size, select=THREAD_SELECT, metadata={"graph_id": graph_id}, **STABLE_ORDER)


async def count_threads(client: LangGraphClient, graph_id: str, *, page_size: int = PAGE_SIZE) -> int:
    """How many threads ``graph_id`` has: ``POST /threads/count``, or, on a server without it (404, 405,
    501: `Routes.count`), by paging ``threads.search`` over thread ids."""
    support = routes(client)
    if support.count is None:
        try:
            return await client.threads.count(metadata={"graph_id": graph_id})
        except APIStatusError as exc:
            if exc.status_code not in MISSING_ROUTE:
                raise
            support.count = exc.status_code
    total = 0
    async for page in search_pages(client, size=page_size, select=["thread_id"], metadata={"graph_id": graph_id}, **STABLE_ORDER):
        total += len(page)
    return total


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
    interrupt raised in a node the serving code no longer has gets that step as an interrupted
    task (`lost_steps`): the gate run after a rollout, on a server already serving the candidate,
    still sees the thread paused in the node the candidate lacks.

    Values come from the state wherever it is read: threads with pending work, and idle threads
    whose record is stale (`record_is_stale`: a migration wrote their last state); every other
    idle thread's values come from its record (no `get_state`)."""
    total = await count_threads(client, graph_id)
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def snapshot(thread: Mapping[str, Any]) -> ThreadSnapshot:
        values = thread.get("values") if isinstance(thread.get("values"), dict) else {}
        facts: dict[str, Any] = {}
        # An idle thread can still hold a pending interrupt (langgraph dev reports a thread
        # idle after a queued resume on it is cancelled): read its state too.
        # An idle thread a migration repaired: its record holds the values the update started from.
        if thread["status"] in PAUSED_STATUSES or thread.get("interrupts") or record_is_stale(thread):
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
                lost = (
                    lost_nodes(lost_steps(thread, state, lock=live.lock, nodes=live.topology.nodes))
                    if live is not None and live.topology is not None
                    else []
                )
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

    async for page in thread_pages(client, graph_id, size=page_size):
        for item in await asyncio.gather(*(snapshot(t) for t in page)):
            done += 1
            yield item
        if progress:
            progress(graph_id, done, max(total, done))
