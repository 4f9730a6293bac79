"""Paged reads must advance, and every request ends within the command's deadline (issue 37, "the CLI waits forever").

The check itself (`sources/api/paging.PageProgress`, `offset_pages`), then every paged read of the Agent Server
source against a server that answers the same full page whatever the offset (or ``before``), then the deadline
(`sources/budget.Deadline`) on its own and in the client's HTTP layer, against answers that trickle: every read
arrives well within its timeout, and only the total stops them. The server is an `httpx.MockTransport` (no sockets).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest
import pytest_socket
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.errors import BadAnswer, LiveUnreachable, NoProgress, OutOfTime
from migrations_playbook.proof.shadow import api as shadow_api
from migrations_playbook.sources.api import reads, turns, views
from migrations_playbook.sources.api.answers import checked
from migrations_playbook.sources.api.paging import PageProgress, offset_pages
from migrations_playbook.sources.api.source import ApiSource
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.budget import Deadline

URL = "http://live.test"


@pytest.fixture(autouse=True)
def unix_sockets_only() -> None:
    """asyncio's event loop needs a unix socketpair (its self-pipe); the network stays blocked."""
    pytest_socket.enable_socket()
    pytest_socket.disable_socket(allow_unix_socket=True)


# -- the check ------------------------------------------------------------------------------------


def test_a_page_of_ids_seen_before_is_no_progress_naming_the_server_route_and_offsets() -> None:
    progress = PageProgress(URL, "POST /threads/search", "threads")
    progress.advance(["a", "b"], "offset 0")
    with pytest.raises(NoProgress) as caught:
        progress.advance(["a", "b"], "offset 2")
    message = str(caught.value)
    assert "\n" not in message
    assert f"server {URL} answered POST /threads/search for offset 2 with the same 2 threads as for offset 0" in message
    assert isinstance(caught.value, BadAnswer) and isinstance(caught.value, LiveUnreachable)  # exit 3


@pytest.mark.parametrize(
    "pages",
    [
        pytest.param([["a", "b", "c"], ["c", "d", "e"], ["e", "f"]], id="pages-shifted-by-a-deletion"),
        pytest.param([["a", "b"], []], id="an-empty-last-page"),
        pytest.param([["a", "a"], ["b", "b"]], id="an-id-twice-on-one-page"),
    ],
)
def test_a_page_with_anything_new_on_it_advances(pages: list[list[str]]) -> None:
    progress = PageProgress(URL, "POST /threads/search", "threads")
    for number, page in enumerate(pages):
        progress.advance(page, f"offset {number}")


def test_pages_that_alternate_between_two_sets_are_caught_on_the_third() -> None:
    progress = PageProgress(URL, "POST /assistants/search", "assistants")
    progress.advance(["a"], "offset 0")
    progress.advance(["b"], "offset 1")
    with pytest.raises(NoProgress, match="for offset 2 with the same 1 assistants as for offset 0"):
        progress.advance(["a"], "offset 2")


async def _pages(fetch: Callable[[int], Any], size: int) -> list[Sequence[str]]:
    progress = PageProgress(URL, "POST /threads/search", "threads")
    return [page async for page in offset_pages(fetch, size=size, key=str, progress=progress)]


async def test_offset_pages_asks_for_each_offset_and_stops_at_a_short_page() -> None:
    asked: list[int] = []

    async def fetch(offset: int) -> list[str]:
        asked.append(offset)
        return [f"t{i}" for i in range(offset, min(offset + 3, 7))]

    assert await _pages(fetch, 3) == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6"]]
    assert asked == [0, 3, 6]


async def test_offset_pages_stops_at_the_first_page_that_repeats() -> None:
    asked: list[int] = []

    async def fetch(offset: int) -> list[str]:
        asked.append(offset)
        return ["t0", "t1", "t2"]  # whatever the offset

    with pytest.raises(NoProgress, match="for offset 3 with the same 3 threads as for offset 0"):
        await _pages(fetch, 3)
    assert asked == [0, 3]


# -- every paged read of the Agent Server source, against a server that ignores the offset -----------------


ASSISTANT = {"assistant_id": "a-0", "graph_id": "g", "metadata": {"created_by": "system"}, "version": 1, "context": {}}


def _endless(request: httpx.Request) -> httpx.Response:
    """An Agent Server whose every paged route answers the same full page, whatever the offset or ``before``."""
    body = json.loads(request.content or b"{}")
    size = int(body.get("limit") or 10)
    path = request.url.path
    if path == "/threads/count":
        return httpx.Response(404, json={"detail": "Not Found"})  # so the count pages threads.search too
    if path == "/assistants/search":
        return httpx.Response(200, json=[{**ASSISTANT, "assistant_id": f"a-{i}"} for i in range(size)])
    if path == "/threads/search":
        thread = {"thread_id": "", "status": "idle", "values": {}, "interrupts": {}, "metadata": {"graph_id": "g"}}
        return httpx.Response(200, json=[{**thread, "thread_id": f"t-{i}"} for i in range(size)])
    if path.endswith("/history"):
        state = {"values": {}, "next": [], "tasks": [], "metadata": {}}
        return httpx.Response(200, json=[{**state, "checkpoint": {"checkpoint_id": f"c-{i}"}} for i in range(size)])
    if path == "/store/items/search":
        return httpx.Response(200, json={"items": [{"namespace": ["n"], "key": f"k-{i}", "value": {}} for i in range(size)]})
    return httpx.Response(404, json={"detail": "Not Found"})


def _client(handler: Callable[[httpx.Request], Any], deadline: Deadline | None = None) -> LangGraphClient:
    transport = httpx.MockTransport(handler)
    return checked(LangGraphClient(httpx.AsyncClient(base_url=URL, transport=transport)), deadline)


def _source(client: LangGraphClient) -> ApiSource:
    source = ApiSource(SourceRequest(live=URL))
    source._client = client  # entered: the reads below need only the client
    return source


class _Guard:
    async def check(self, client: Any, *, graph_id: str, thread: Any) -> None:
        return None


async def _drain(items: AsyncIterator[Any]) -> None:
    async for _ in items:
        pass


THREADS, ASSISTANTS = "POST /threads/search", "POST /assistants/search"
READS: dict[str, tuple[Callable[[LangGraphClient], Any], str]] = {
    "live_graph_ids": (lambda c: reads.live_graph_ids(c), ASSISTANTS),
    "iter_assistants": (lambda c: _drain(reads.iter_assistants(c, "g")), ASSISTANTS),
    "count_threads": (lambda c: reads.count_threads(c, "g"), THREADS),
    "iter_threads": (lambda c: _drain(reads.iter_threads(c, "g")), THREADS),
    "migrate read_threads": (lambda c: views.read_threads(c, "g", served="live", candidate=None, lock=None), THREADS),
    "migrate assistant_records": (lambda c: _source(c).assistant_records("g"), ASSISTANTS),
    "migrate rollback_assistants": (lambda c: _source(c).rollback_assistants("0001", "g"), ASSISTANTS),
    "inflight guard_refusals": (lambda c: _source(c).guard_refusals(_Guard(), ["g"]), THREADS),
    "replay paused_threads": (lambda c: _drain(_source(c).paused_threads(["g"])), THREADS),
    "turns fetch_history": (lambda c: turns.fetch_history(c, "t-0"), "POST /threads/t-0/history"),
}
"""Every paged read `ApiSource` and its commands make, and its route (the shadow's store read is below)."""


@pytest.mark.parametrize("read", READS)
async def test_every_paged_read_stops_on_a_page_that_repeats_naming_its_route(read: str) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        return _endless(request)

    run, route = READS[read]
    with pytest.raises(NoProgress, match=f"server {URL} answered {route} for "):
        await run(_client(handler))
    assert asked.count(route) == 2, asked  # the page that repeats is the second, not the thousandth


async def test_the_shadows_store_read_stops_on_a_page_that_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        shadow_api,
        "get_client",
        lambda url, headers=None: LangGraphClient(httpx.AsyncClient(base_url=url, transport=httpx.MockTransport(_endless))),
    )
    with pytest.raises(NoProgress, match="POST /store/items/search for offset 500"):
        await shadow_api.store_items(URL, {})


# -- the deadline --------------------------------------------------------------------------------------


async def test_a_block_that_outlasts_the_deadline_is_out_of_time_naming_the_request() -> None:
    deadline = Deadline.start(0.2)
    started = time.monotonic()
    with pytest.raises(OutOfTime) as caught:
        async with deadline.within(f"server {URL}", "POST /threads/search"):
            await asyncio.sleep(30)
    assert time.monotonic() - started < 1.5
    assert f"the command's deadline (0.2 s, --deadline) passed waiting for server {URL} to answer POST /threads/search" in str(
        caught.value
    )
    assert isinstance(caught.value, LiveUnreachable)  # exit 3


async def test_nothing_is_sent_once_the_deadline_has_passed() -> None:
    ran = []
    with pytest.raises(OutOfTime):
        async with Deadline.start(-1).within("server x", "GET /ok"):
            ran.append(True)
    assert ran == []


async def test_a_timeout_of_the_blocks_own_is_not_the_deadlines() -> None:
    with pytest.raises(TimeoutError) as caught:
        async with Deadline.start(30).within("server x", "GET /ok"):
            raise TimeoutError("its own")
    assert not isinstance(caught.value, OutOfTime) and str(caught.value) == "its own"


def test_call_waits_for_synchronous_work_until_the_deadline_only() -> None:
    deadline = Deadline.start(0.3)
    assert deadline.call(lambda: 7, "LangSmith at x", lambda: "GET /api/v1/sessions") == 7
    with pytest.raises(KeyError):
        deadline.call(lambda: {}["missing"], "LangSmith at x", lambda: "GET /api/v1/sessions")
    started = time.monotonic()
    with pytest.raises(OutOfTime, match="waiting for LangSmith at x to answer POST /api/v2/runs/query"):
        deadline.call(lambda: time.sleep(30), "LangSmith at x", lambda: "POST /api/v2/runs/query")
    assert time.monotonic() - started < 1.5


class _Trickle(httpx.AsyncByteStream):
    """A body that comes a chunk every ``every`` seconds, far under any read timeout."""

    def __init__(self, chunks: Sequence[bytes], every: float) -> None:
        self.chunks, self.every = chunks, every

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await asyncio.sleep(self.every)
            yield chunk


def _body_trickle(request: httpx.Request) -> httpx.Response:
    body = b"[" + b" " * 10_000 + b"]"
    return httpx.Response(200, headers={"content-type": "application/json"}, stream=_Trickle([bytes([b]) for b in body], 0.02))


async def _slow_headers(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(30)  # the answer's head never comes in time
    return httpx.Response(200, json=[])


def _event_trickle(request: httpx.Request) -> httpx.Response:
    events = [b"event: metadata\ndata: {}\n\n", *(b"event: updates\ndata: {}\n\n" for _ in range(1000))]
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Trickle(events, 0.05))


@pytest.mark.parametrize(
    ("handler", "request_line"),
    [
        pytest.param(_body_trickle, "POST /threads/search", id="a-body-a-byte-at-a-time"),
        pytest.param(_slow_headers, "POST /threads/search", id="headers-that-never-come"),
        pytest.param(_event_trickle, "POST /threads/t-0/runs/stream", id="an-event-stream-without-end"),
    ],
)
async def test_the_clients_every_request_ends_within_the_deadline(handler: Any, request_line: str) -> None:
    """Each byte arrives well within the read timeout: only the total stops the request."""
    client = _client(handler, Deadline.start(0.5))
    started = time.monotonic()
    with pytest.raises(OutOfTime, match=f"to answer {request_line}"):
        if "stream" in request_line:
            await _drain(client.runs.stream("t-0", "g", input={}))
        else:
            await client.threads.search(limit=10)
    assert time.monotonic() - started < 2.0
