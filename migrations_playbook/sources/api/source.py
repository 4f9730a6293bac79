"""`ApiSource`: the `Source` protocol over a live Agent Server (``--live URL``), read through langgraph-sdk.

The reads themselves are `api/reads.py`'s. This class adds what a command needs around them: the
client, checked reachable when the source is entered (exit 3 otherwise) and closed after use;
the graphs the server serves (an id it does not serve is a usage error, before any thread is
read); where the live reducers come from (``--live-contract``, else the contract the server
serves at `api.CONTRACT_ROUTE`). A request the server refuses inside the block (a 4xx, or a 5xx
on a whole-server call: per-thread reads handle their own) is a usage error naming the status and
the server's message (exit 2); a server that stops answering midway is unreachable (exit 3).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from langgraph_sdk.client import LangGraphClient

from migrations_playbook.errors import LiveUnreachable, Unsupported, UsageError, refused, server_refusal
from migrations_playbook.graphcode.contract import contract_hash, read_locks, strip_lock
from migrations_playbook.model import LiveGraph, ThreadSnapshot
from migrations_playbook.sources.api import reads as api
from migrations_playbook.sources.api import turns
from migrations_playbook.sources.api.repair import ApiRepair
from migrations_playbook.sources.api.replay import ApiReplay
from migrations_playbook.sources.base import Capability, Progress, SinkT, SourceRequest

GUARD_PAGE = 500
"""Threads per ``threads.search`` page when counting what a guard would refuse."""


def wanted_graphs(asked: Sequence[str], served: Mapping[str, Any]) -> list[str]:
    """The ``--graph`` ids asked for (default: every graph the live server serves); an id
    the server does not serve is a usage error, before any thread is read."""
    unknown = [g for g in asked if g not in served]
    if unknown:
        raise UsageError(
            f"graph(s) {', '.join(unknown)} not on the live server; it serves: {', '.join(sorted(served)) or 'none'}"
        )
    return list(asked) or sorted(served)


def _whose(locks: Mapping[str, Mapping[str, Any]] | None, graph_ids: Sequence[str]) -> str:
    """Which code the locks are: each graph's contract hash, and the graphs they do not cover."""
    if not locks:
        return " (none for these graphs)"
    hashes = [f"{g} {contract_hash(strip_lock(dict(locks[g])))}" for g in graph_ids if g in locks]
    missing = [g for g in graph_ids if g not in locks]
    text = f": the deployed code's locks {', '.join(hashes)}" if hashes else ""
    return text + (f"; none for {', '.join(missing)}" if missing else "")


class ApiSource(ApiRepair, ApiReplay):
    """A live Agent Server."""

    CAPABILITIES: frozenset[Capability] = frozenset(
        {"assistants", "dev_copy", "served_code", "staging_server", "thread_records", "turns"}
    )

    def __init__(self, request: SourceRequest) -> None:
        assert request.live is not None  # open_source picks this source for --live
        self.request = request
        self.url: str = request.live
        self.label = request.live
        self._client: LangGraphClient | None = None
        self._assistant_ids: dict[str, str] = {}
        self._notes: list[str] = []
        self._routes: api.Routes | None = None
        """What the server was found to lack of the optional routes (its notes are the report's)."""
        self._served: dict[str, dict[str, Any]] | None = None
        """The locks the server serves at `api.CONTRACT_ROUTE` (empty: it serves none); None until read."""

    # -- the protocol ----------------------------------------------------------------------

    def supports(self, capability: Capability) -> bool:
        return capability in self.CAPABILITIES

    def require(self, capability: Capability, what: str) -> None:
        if not self.supports(capability):
            raise Unsupported(f"{what}: the Agent Server source cannot do it")

    @property
    def client(self) -> LangGraphClient:
        """The open client (inside ``async with``)."""
        if self._client is None:
            raise RuntimeError("ApiSource used outside `async with`")
        return self._client

    async def __aenter__(self) -> Self:
        self._client = api.connect(self.url, self.request.headers, deadline=self.request.deadline)
        try:
            self._routes = api.routes(self._client)
            await api.ensure_reachable(self._client, self.url)
        except BaseException:
            await self._client.aclose()
            self._client = None
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        import httpx
        from langgraph_sdk.errors import APIConnectionError

        client, self._client = self._client, None
        try:
            if isinstance(exc, httpx.TransportError | APIConnectionError):
                raise LiveUnreachable(f"live server {self.url} stopped answering: {type(exc).__name__}: {exc}") from None
            if isinstance(exc, httpx.HTTPStatusError):  # langgraph-sdk's APIStatusError included
                raise UsageError(f"live server {self.url} {refused(exc)}") from None
        finally:
            if client is not None:
                await client.aclose()

    async def graph_ids(self, asked: Sequence[str], *, owners: Collection[str] | None = None) -> list[str]:
        self._assistant_ids = await api.live_graph_ids(self.client)
        return wanted_graphs(asked, self._assistant_ids)

    async def live_graphs(self, graph_ids: Sequence[str], *, locks: bool = True) -> dict[str, LiveGraph]:
        found: dict[str, dict[str, Any]] | None = None
        if locks:
            if self.request.live_contract:
                found = read_locks(Path(self.request.live_contract))
                self._notes.append(
                    f"live reducers from contract locks at {self.request.live_contract}" + _whose(found, graph_ids)
                )
            else:
                found = await api.served_locks(self.client)
                self._served = found or {}
                if found is not None:
                    self._notes.append(
                        f"live reducers from the contract the server serves at {api.CONTRACT_ROUTE}" + _whose(found, graph_ids)
                    )
                else:
                    self._notes.append(
                        f"no contract locks for the deployed code (the server serves none at {api.CONTRACT_ROUTE}; "
                        "--live-contract DIR gives them): reducers judged from the schemas and stored values only"
                    )
        # the schemas are the gate's evidence (FIELD_REQUIRED_MISSING); a snapshot records the topology only
        return await api.live_graphs(self.client, {g: self._assistant_ids[g] for g in graph_ids}, found, schemas=locks)

    async def contract_served(self) -> dict[str, str] | None:
        if self._served is None:
            self._served = await api.served_locks(self.client) or {}
        if not self._served:
            return None
        return {graph_id: contract_hash(strip_lock(dict(lock))) for graph_id, lock in self._served.items()}

    async def contract_stamps(self, graph_ids: Sequence[str]) -> dict[str, set[str]]:
        return {g: await api.contract_stamps(self.client, g) for g in graph_ids}

    async def threads(
        self, graph_ids: Sequence[str], *, live: Mapping[str, LiveGraph] | None = None, progress: Progress | None = None
    ) -> AsyncIterator[ThreadSnapshot]:
        for graph_id in graph_ids:
            async for thread in api.iter_threads(
                self.client, graph_id, progress=progress, live=live[graph_id] if live is not None else None
            ):
                yield thread

    async def assistants(self, graph_id: str) -> AsyncIterator[dict[str, Any]]:
        async for assistant in api.iter_assistants(self.client, graph_id):
            yield assistant

    async def scan(
        self,
        graph_ids: Sequence[str],
        live: Mapping[str, LiveGraph],
        make_sink: Callable[[], SinkT],
        *,
        progress: Progress | None = None,
    ) -> SinkT:
        sink = make_sink()
        async for thread in self.threads(graph_ids, live=live, progress=progress):
            sink.add(thread)
        return sink

    def notes(self) -> list[str]:
        return [*self._notes, *(self._routes.notes() if self._routes is not None else [])]

    # -- the runtime guard's view ------------------------------------------------------------

    async def guard_refusals(self, guard: Any, graph_ids: Sequence[str]) -> dict[str, Any]:
        """Per graph: the threads the running code's guard (`guard.Guard`) would refuse, by finding code."""
        refusals: dict[str, Any] = {}
        for graph_id in graph_ids:
            entry = refusals.setdefault(graph_id, {"threads": 0, "by_code": {}, "thread_ids": []})
            async for page in api.search_pages(
                self.client,
                size=GUARD_PAGE,
                select=["thread_id", "status", "values", "interrupts", "metadata"],
                metadata={"graph_id": graph_id},
                **api.STABLE_ORDER,
            ):
                for thread in page:
                    refusal = await guard.check(self.client, graph_id=graph_id, thread=thread)
                    if refusal is None:
                        continue
                    entry["threads"] += 1
                    entry["thread_ids"] = (entry["thread_ids"] + [thread["thread_id"]])[:20]
                    code = refusal.findings[0].code
                    entry["by_code"][code] = entry["by_code"].get(code, 0) + 1
        return refusals

    # -- a thread's turns ---------------------------------------------------------------------

    async def thread_history(self, thread_id: str) -> list[Mapping[str, Any]]:
        from langgraph_sdk.errors import NotFoundError

        try:
            return await turns.fetch_history(self.client, thread_id)
        except NotFoundError:
            raise UsageError(f"thread {thread_id} not found on {self.url}") from None

    async def rerun_turn(
        self, thread_id: str, turn: int, text: str, *, context: dict[str, Any] | None, assistant_id: str | None
    ) -> turns.Rerun:
        import httpx
        from langgraph_sdk.errors import APIStatusError, NotFoundError

        try:
            return await turns.rerun_from_turn(self.client, thread_id, turn, text, context=context, assistant_id=assistant_id)
        except NotFoundError:
            raise UsageError(f"thread {thread_id} not found on {self.url}") from None
        except turns.TurnsError as exc:
            raise UsageError(str(exc)) from None
        except (APIStatusError, httpx.HTTPStatusError) as exc:
            raise UsageError(f"the server refused the rerun ({server_refusal(exc)})") from None
