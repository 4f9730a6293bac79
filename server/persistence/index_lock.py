"""Thread deletes and patches run one at a time (`_HOLD_AN_INDEX`).

The runtime holds a thread's position in its list across an await, so concurrent deletes
were 500s or removed another thread's record. `thread_records` wraps those operations
with `_one_at_a_time` over `_INDEX_LOCK`, a lock that every event loop of the process can
wait on (`_AnyLoopLock`): the server calls them from more than one.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any

_HOLD_AN_INDEX = {("Threads", "delete"), ("Threads", "patch")}
"""Operations that find a thread's position in the runtime's thread list, await (the auth
handler; a delete also its checkpoints), then use the position: ``thread_list.pop(idx)``,
``thread_list[idx] = thread`` (langgraph-runtime-inmem 0.36.7). A delete in between shifts
the list, so concurrent deletes failed with a 500 (``pop index out of range``) or removed
another thread's record, and a patch could overwrite another thread's record. Run one at a
time, no position is stale: only a delete removes threads from the list."""


class _AnyLoopLock:
    """A lock coroutines of any event loop in the process can await: the server calls these
    operations from its API loop and from its workers' loops (a stateless run's worker deletes
    its temporary thread), each in a thread of its own, so an `asyncio.Lock` (bound to one
    loop) cannot be shared. Waiting polls every millisecond; it is held for one operation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def __aenter__(self) -> None:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(0.001)

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()


_INDEX_LOCK = _AnyLoopLock()
"""Held by `_HOLD_AN_INDEX` operations (prune and an assistant's cascade call the wrapped
``Threads.delete`` once per thread, and take it per call)."""


def _one_at_a_time(operation: Callable[..., Awaitable[Any]], lock: _AnyLoopLock) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(operation)
    async def serialized(*args: Any, **kwargs: Any) -> Any:
        async with lock:
            return await operation(*args, **kwargs)

    return serialized
