"""The checkpoint store unreachable: a 503 that says so, within a bounded time (issue 37).

With the PostgreSQL checkpointer (`server.postgres_checkpointer`) stopped, every request
that reached it was a bare 500 ``Internal Server Error``, after up to 30 s (the pool's
default wait). Nothing was lost, and the server served again seconds after PostgreSQL came
back, but a client could not tell an outage from a bug, nor when to retry.

The class, in two halves that meet at one exception, `CheckpointStoreUnavailable`:

* the checkpointer raises it, and only it, for "the database cannot be reached": a
  connection refused or dropped, no connection from the pool in time, no answer in time
  (`server.postgres_checkpointer`; its timeouts bound how long that takes);
* `OutageMiddleware`, in the custom app right under `server.body_depth` (`server/webapp.py`),
  turns it into ``503`` with ``Retry-After`` and a JSON body, on every route: the API's own (runs
  create/wait/stream on a thread, thread state, history, update_state, copy, delete, a thread
  created with ``supersteps``) and ours (``/visible``). The body::

      {"error": "checkpoint_store_unavailable",
       "detail": "the checkpoint store (PostgreSQL) is unavailable: ..."}

A refused request changes nothing. The requests that would change something before they
reach the checkpointer (`PREFLIGHT`: a run is created, then fails in the background; a copy
adds the new thread's record first; a delete drops the thread's runs first) check that the
store answers before the server handles them: the checkpointer registers a probe for its
event loop (`register_probe`) and the middleware calls it. A failure after the probe (the
database stops in the middle of a request) is still a 503 if nothing was sent yet; a run
already started fails with status ``error`` and this exception's message.

In-process requests (the run handler's own reads, ``root_path`` ``/noauth``) are passed on
untouched: the exception reaches the outer request, whose middleware answers. Turned into a
503 there, the guard would read it as a state the running code cannot build
(`migrations_playbook.guard`) instead of an outage.

Nothing happens at import; without a registered probe (the SQLite checkpointer) the
middleware only watches for the exception, which nothing raises.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final, TypeVar

from server.payload_middleware import _buffer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Probe = Callable[[], Awaitable[None]]
T = TypeVar("T")

STATUS: Final = 503
ERROR: Final = "checkpoint_store_unavailable"
"""The ``error`` field of the 503's body: what a client matches on."""
RETRY_AFTER_S: Final = 5
"""The 503's ``Retry-After``: the server serves again within seconds of PostgreSQL's return."""
DETAIL: Final = "the checkpoint store (PostgreSQL) is unavailable: this request changed nothing; retry in a few seconds"
IN_PROCESS_ROOT: Final = "/noauth"
"""``root_path`` of the in-process client's requests: passed on (module docstring)."""

_THREAD = r"/threads/[^/]+"
PREFLIGHT: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("POST", re.compile(rf"{_THREAD}/runs(/wait|/stream)?/?")),  # the run is created, then reads its thread
    ("POST", re.compile(rf"{_THREAD}/state/?")),  # update_state
    ("POST", re.compile(rf"{_THREAD}/copy/?")),  # the new thread's record first, then its checkpoints
    ("DELETE", re.compile(rf"{_THREAD}/?")),  # the thread's runs first, then its checkpoints
    ("POST", re.compile(r"/threads/prune/?")),  # deletes, as above
    ("POST", re.compile(r"/visible/[^/]+/stream/?")),  # ours: may create a thread, then runs
)
"""Requests that would change something before they reach the checkpointer: the store is
probed first. Creating a thread with ``supersteps`` (its first state) is one too (`needs_probe`).
Stateless runs (``/runs``, ``/runs/wait``, ...) are not: they run without a checkpointer, and
are served during an outage."""

logger = logging.getLogger(__name__)


class CheckpointStoreUnavailable(RuntimeError):
    """The checkpointer's database cannot be reached, or did not answer in time.

    A RuntimeError so that a run that fails on it shows its message (langgraph-api's serde
    shows a RuntimeError's, and hides other exceptions' behind "An internal error occurred"):
    ``{"error": "CheckpointStoreUnavailable", "message": "the checkpoint store (PostgreSQL) is
    unavailable: ..."}`` on the run's stream and join, and on its thread, whose status is ``error``."""


_PROBES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Probe] = weakref.WeakKeyDictionary()


def register_probe(probe: Probe) -> Callable[[], None]:
    """Make ``probe`` the running event loop's check that the store answers (it raises
    `CheckpointStoreUnavailable` when it does not); returns the function that removes it.
    A checkpointer registers one per loop it serves (its pool belongs to that loop)."""
    loop = asyncio.get_running_loop()
    _PROBES[loop] = probe

    def unregister() -> None:
        if _PROBES.get(loop) is probe:
            del _PROBES[loop]

    return unregister


def has_probe() -> bool:
    """Whether the running loop's checkpointer registered a probe."""
    return asyncio.get_running_loop() in _PROBES


async def probe() -> None:
    """The running loop's probe (nothing without one): raises `CheckpointStoreUnavailable`."""
    found = _PROBES.get(asyncio.get_running_loop())
    if found is not None:
        await found()


async def within(awaitable: Awaitable[T], seconds: float, what: str) -> T:
    """``awaitable``'s result, or `CheckpointStoreUnavailable` after ``seconds``.

    On time-out the work is cancelled and left to finish in the background: psycopg answers a
    cancellation by asking the server to cancel the query, up to 10 s more against a server
    that does not answer, and the caller must not wait for that."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:  # the caller was cancelled: so is the work
        task.cancel()
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        raise CheckpointStoreUnavailable(
            f"the checkpoint store (PostgreSQL) is unavailable: no answer to {what} within {seconds:g} s"
        )
    return task.result()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Collect an abandoned task's end, so asyncio does not report an exception nobody read."""
    if not task.cancelled():
        task.exception()


def unavailable_in(exc: BaseException, depth: int = 8) -> CheckpointStoreUnavailable | None:
    """The `CheckpointStoreUnavailable` that ``exc`` is, wraps (``__cause__``, ``__context__``)
    or groups (an anyio task group's ExceptionGroup), if any."""
    if isinstance(exc, CheckpointStoreUnavailable):
        return exc
    if depth <= 0:
        return None
    inner: list[BaseException] = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else []
    inner += [e for e in (exc.__cause__, exc.__context__) if e is not None]
    for candidate in inner:
        found = unavailable_in(candidate, depth - 1)
        if found is not None:
            return found
    return None


def needs_probe(method: str, path: str) -> bool:
    """Whether the request is in `PREFLIGHT`."""
    return any(method == m and pattern.fullmatch(path) for m, pattern in PREFLIGHT)


def _creates_state(body: bytes) -> bool:
    """A thread-creation body with ``supersteps``: the thread's record first, then its checkpoints."""
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        return False
    return isinstance(payload, dict) and bool(payload.get("supersteps"))


def response(detail: str = DETAIL) -> tuple[Message, Message]:
    """The 503's two ASGI messages."""
    body = json.dumps({"error": ERROR, "detail": detail}, ensure_ascii=False).encode()
    start = {
        "type": "http.response.start",
        "status": STATUS,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(RETRY_AFTER_S).encode()),
        ],
    }
    return start, {"type": "http.response.body", "body": body}


class OutageMiddleware:
    """`CheckpointStoreUnavailable` -> 503 on every route, and `PREFLIGHT` requests probed first."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("root_path") == IN_PROCESS_ROOT:
            await self.app(scope, receive, send)
            return
        method, path = str(scope.get("method", "")), str(scope.get("path", ""))
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            if has_probe():
                if method == "POST" and path.rstrip("/") == "/threads":
                    body, receive = await _buffer(receive)
                    if _creates_state(body):
                        await probe()
                elif needs_probe(method, path):
                    await probe()
            await self.app(scope, receive, watched)
        except Exception as exc:
            unavailable = unavailable_in(exc)
            if unavailable is None or started:
                raise  # not an outage, or the answer is under way: the server's own handling
            cause = unavailable.__cause__
            logger.warning("%s %s: 503, %s%s", method, path, unavailable, f" ({cause!r})" if cause is not None else "")
            for message in response():
                await send(message)
