"""Paged reads that must advance: each page brings something new, or the read stops (exit 3).

Agent Server pages `threads.search`, `assistants.search` and the store's items by offset, a thread's
history by ``before``; LangSmith pages its runs by cursor. A server that answers the same full page
whatever the offset (a proxy that drops the body, a stand-in, a bug) kept every paging loop of the
playbook asking forever (issue 37: 1,500-2,200 requests in 45 s and no output). Every paging loop
makes the one check here: a page none of whose ids is new (the same ids as a page before) is a
`NoProgress` naming the server, the route, and where the page repeated. A page that only partly
repeats is a live server's: its pages shift when threads are deleted between two reads. A search
that keeps bringing new ids without end is stopped by the command's deadline (`sources/budget.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from langgraph_sdk.client import LangGraphClient

from migrations_playbook.errors import NoProgress

T = TypeVar("T")


class PageProgress:
    """The ids one paged read has seen, and where each was seen first."""

    def __init__(self, server: str, route: str, noun: str) -> None:
        self.server = server
        self.route = route
        self.noun = noun
        """What the pages hold (``threads``, ``assistants``, ``checkpoints``): the message names it."""
        self._first: dict[Hashable, str] = {}

    def advance(self, ids: Sequence[Hashable], at: str) -> None:
        """Take the page asked for ``at`` (``offset 500``, ``the page before checkpoint 1f0...``); `NoProgress`
        when it holds ids and every one of them was on a page before."""
        if ids and all(key in self._first for key in ids):
            earlier = list(dict.fromkeys(self._first[key] for key in ids))
            raise NoProgress(
                f"server {self.server} answered {self.route} for {at} with the same {len(ids)} {self.noun} as for "
                f"{', '.join(earlier[:3])}{', ...' if len(earlier) > 3 else ''}: its paging does not advance "
                "(it answers the same page whatever the offset), so reading on would never end"
            )
        for key in ids:
            self._first.setdefault(key, at)


def server_of(client: LangGraphClient) -> str:
    """``scheme://host:port`` of the server ``client`` talks to, as the errors name it."""
    return str(client.http.client.base_url).rstrip("/")


async def offset_pages(
    fetch: Callable[[int], Awaitable[Sequence[T]]],
    *,
    size: int,
    key: Callable[[T], Hashable],
    progress: PageProgress,
) -> AsyncIterator[Sequence[T]]:
    """Every page of an offset-paged read, in order: ``fetch(offset)`` asks for one page of ``size``
    items; a page shorter than ``size`` is the last. Each page must bring an item not seen before (by
    ``key``): a page that does not is a `NoProgress`."""
    offset = 0
    while True:
        page = await fetch(offset)
        progress.advance([key(item) for item in page], f"offset {offset}")
        yield page
        if len(page) < size:
            return
        offset += len(page)
