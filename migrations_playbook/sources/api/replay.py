"""The replay operations of `ApiSource` (a mixin; see `replay_protocol.py`).

The staging copy of an Agent Server's threads is another Agent Server (`ServedCopy`): one started
here from a copy of the live `langgraph dev` folder (``--persistence DIR``, `staging.start_staging`),
or one restored from a live snapshot (``--staging-url URL``). It is reached as an `ApiSource` of its
own, and the same methods read it: the live thread's state and the staging thread's (which must be
at the same checkpoint, `staging.require_fresh`), then the resumed run, on staging only.

Replay talks to two servers: a request either of them refuses, or a server that stops answering,
is worded by the server it came from (`_as_replay_words`), as replay always worded it, not as the
live source's block words a failure of the live server.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self, cast

from langgraph_sdk.client import LangGraphClient

from migrations_playbook.errors import LiveUnreachable, UsageError, origin, refused
from migrations_playbook.model import PAUSED_STATUSES
from migrations_playbook.sources.api import reads as api
from migrations_playbook.sources.api.reads import live_graph_ids
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.replay_protocol import PausedThread, RunOutcome, StagingCopy
from migrations_playbook.staging.live_copy import require_fresh, start_staging

REPLAY_PAGE = 200
"""Threads per ``threads.search`` page when listing the paused threads."""


@contextlib.contextmanager
def _as_replay_words() -> Iterator[None]:
    """A refused request or a dropped connection, named by the server it came from (exit 2, exit 3)."""
    import httpx
    from langgraph_sdk.errors import APIConnectionError

    try:
        yield
    except (httpx.TransportError, APIConnectionError) as exc:
        raise LiveUnreachable(f"server {origin(exc)} is unreachable: {type(exc).__name__}: {exc}") from None
    except httpx.HTTPStatusError as exc:  # langgraph-sdk's APIStatusError included
        raise UsageError(f"server {origin(exc)} {refused(exc)}") from None


class ApiReplay:
    """Mixed into `ApiSource`."""

    url: str
    request: SourceRequest

    @property
    def client(self) -> LangGraphClient:
        raise NotImplementedError  # ApiSource's

    # -- the live side ---------------------------------------------------------------------

    def staging_copy(
        self, candidate: Path, *, persistence: Path | None = None, url: str | None = None, plan: bool = False
    ) -> contextlib.AbstractAsyncContextManager[StagingCopy]:
        return self._served_copy(candidate, persistence, url)

    @contextlib.asynccontextmanager
    async def _served_copy(self, candidate: Path, persistence: Path | None, url: str | None) -> AsyncIterator[StagingCopy]:
        with contextlib.ExitStack() as stack:
            held = None
            if persistence is not None:
                try:
                    server = start_staging(candidate, persistence, stack)
                except FileNotFoundError as exc:
                    raise UsageError(str(exc)) from None
                url, held = server.url, server.held.note()
            assert url is not None  # the parser asks for --persistence or --staging-url
            async with contextlib.AsyncExitStack() as opened:
                yield ServedCopy(self, url, opened, held=held)

    def staging_source(self, copy: StagingCopy) -> Self:
        assert isinstance(copy, ServedCopy)  # the copy this source made
        return cast(Self, copy.opened())

    async def paused_threads(self, graph_ids: Sequence[str]) -> AsyncGenerator[PausedThread, None]:
        for graph_id in graph_ids:
            for status in sorted(PAUSED_STATUSES):
                pages = api.search_pages(
                    self.client,
                    size=REPLAY_PAGE,
                    select=["thread_id", "status"],
                    metadata={"graph_id": graph_id},
                    status=status,
                    **api.STABLE_ORDER,
                )
                while True:
                    with _as_replay_words():
                        page = await anext(pages, None)
                    if page is None:
                        break
                    for thread in page:
                        yield PausedThread(graph_id=graph_id, thread_id=thread["thread_id"], status=status)

    async def paused_state(self, thread: PausedThread) -> Mapping[str, Any] | None:
        with _as_replay_words():
            state: Mapping[str, Any] = await self.client.threads.get_state(thread.thread_id, subgraphs=True)
        return state

    # -- the staging side (this source is the staging server) ----------------------------------

    async def staged_state(self, thread_id: str, graph_id: str, live_state: Mapping[str, Any]) -> Mapping[str, Any]:
        """The thread's state here; `staging.StaleCopy` unless it is at ``live_state``'s checkpoint."""
        from langgraph_sdk.errors import NotFoundError

        state: Mapping[str, Any]
        with _as_replay_words():
            try:
                state = await self.client.threads.get_state(thread_id, subgraphs=True)
            except NotFoundError:
                state = {}
        require_fresh(thread_id, live_state, state)
        return state

    async def resume_staged(self, thread_id: str, graph_id: str, resume: Any) -> RunOutcome:
        """Resume the thread here with ``resume`` and collect what the run showed."""
        from langgraph_sdk.errors import APIError, APIStatusError

        ran: set[str] = set()
        with _as_replay_words():
            try:
                async for part in self.client.runs.stream(
                    thread_id, graph_id, command={"resume": resume}, stream_mode="updates", stream_subgraphs=True
                ):
                    if part.event == "error":
                        return RunOutcome(ran=frozenset(ran), error=f"the resumed run failed: {part.data}")
                    if part.event.startswith("updates") and isinstance(part.data, dict):
                        namespace = part.event.partition("|")[2]
                        prefix = ":".join(seg.split(":")[0] for seg in namespace.split("|") if seg)
                        ran.update(f"{prefix}:{node}" if prefix else node for node in part.data)
            except APIStatusError as exc:
                return RunOutcome(refused=(exc.status_code, str(exc)))
            except APIError as exc:
                return RunOutcome(error=f"the resume was refused: {exc}")
            after = await self.client.threads.get_state(thread_id, subgraphs=True) if "__interrupt__" in ran else None
        return RunOutcome(ran=frozenset(ran), after=after)


class ServedCopy:
    """An Agent Server's staging copy: a staging server at ``url``, reached as a source of its own."""

    def __init__(self, live: ApiReplay, url: str, stack: contextlib.AsyncExitStack, *, held: str | None = None) -> None:
        self.live = live
        self.url = url
        self.held = held
        """What the copy held back (its unfinished runs and crons), as a note; None when nothing."""
        self.server: ApiReplay | None = None
        self._stack = stack

    async def open(self, asked: Sequence[str]) -> list[str]:
        # As the live source: checked reachable when entered (exit 3), closed with the copy.
        live = self.live.request
        staging = cast(Any, type(self.live))(SourceRequest(live=self.url, headers=live.headers, deadline=live.deadline))
        self.server = await self._stack.enter_async_context(staging)
        with _as_replay_words():
            served = await live_graph_ids(self.live.client)
        return list(asked) or sorted(served)

    def serves(self, graph_id: str) -> bool:
        return True  # the staging server answers for every graph the live one serves

    def note(self) -> str:
        return f"staging server {self.url}" + (f"; {self.held}" if self.held else "")

    async def staged_state(self, thread_id: str, graph_id: str, live_state: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self.opened().staged_state(thread_id, graph_id, live_state)

    async def resume_staged(self, thread_id: str, graph_id: str, resume: Any) -> RunOutcome:
        return await self.opened().resume_staged(thread_id, graph_id, resume)

    def opened(self) -> ApiReplay:
        """The staging server's source (once `open` is awaited)."""
        if self.server is None:
            raise RuntimeError("ServedCopy used before open()")
        return self.server
