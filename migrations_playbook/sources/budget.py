"""The command's deadline: one budget of time for every request a command sends to a server.

Each read of an answer has its own timeout (`api/reads.connect`: 60 s), but a read timeout does not
bound an answer: a server that sends one header line, or one byte of its body, a second never lets a
read time out, and a search that answers the same page whatever the offset never ends at all (issue
37: runs until killed). So a command that talks to a server has a total: a `Deadline`, started when
the command starts (``--deadline SECONDS``, default `DEFAULT_SECONDS`) and carried in its
`SourceRequest` to every client it opens (the live server's, the staging servers', the shadow's
sides'). The client's HTTP layer (`api/answers.CheckedHttp`) runs each request, and each part of an
event stream, `within` what is left of it; when nothing is left, the request in flight is cancelled
and the command stops with `OutOfTime` (exit 3), one line naming the server and the request. Paging
that does not advance stops before that (`api/paging.py`). LangSmith's client is synchronous: `call`
runs it in a daemon thread and stops waiting for it at the deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TypeVar

from migrations_playbook.errors import OutOfTime

T = TypeVar("T")

DEFAULT_SECONDS = 600.0
"""Ten minutes. The slowest full read of a deployment measured in bench/README.md (section 3) is a paged
`threads.search` plus a `get_state` of every thread, 347-452 threads/s on `langgraph dev`: about 30 s for
10,000 threads; the gate reads them at 775-820 threads/s (about 13 s, plus its ~2 s start-up). Twenty
times the slower figure leaves room for a remote server, a network and a loaded machine, and still ends a
command stuck on a stalled server within a CI job's patience. The shadow by classes grows with the classes,
not the threads (32.4 s at 1,000 threads, migrations_playbook/docs/shadow.md). What runs a graph turn per
thread (``shadow --all``: 244 s at 250 threads, about 1 s a thread; replay's and migrate's resumes on a
staging copy) grows with the runs: such a command needs ``--deadline`` sized to them."""


@dataclass(frozen=True)
class Deadline:
    """When the command stops waiting for servers."""

    seconds: float
    """As given (``--deadline``): what the messages quote."""
    ends_at: float
    """`time.monotonic()` at which it passes."""

    @classmethod
    def start(cls, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now."""
        return cls(seconds=seconds, ends_at=time.monotonic() + seconds)

    def left(self) -> float:
        """Seconds left (zero or less: passed)."""
        return self.ends_at - time.monotonic()

    def passed(self, server: str, request: str) -> OutOfTime:
        """The error of a request that was cut off, or not sent, because the deadline passed."""
        return OutOfTime(
            f"the command's deadline ({self.seconds:g} s, --deadline) passed waiting for {server} to answer {request}: "
            "a server that stalls, trickles its answer or pages without end is not waited for "
            "(raise --deadline if it is only slow)"
        )

    @contextlib.asynccontextmanager
    async def within(self, server: str, request: str) -> AsyncIterator[None]:
        """Run the block (one request, or one part of a stream) with what is left; `OutOfTime` when the
        deadline passes before it ends, or has passed already (then nothing is sent)."""
        left = self.left()
        if left <= 0:
            raise self.passed(server, request)
        scope = asyncio.timeout(left)
        try:
            async with scope:
                yield
        except TimeoutError:
            if scope.expired():
                raise self.passed(server, request) from None
            raise  # a timeout of the block's own

    def call(self, work: Callable[[], T], server: str, request: Callable[[], str]) -> T:
        """``work()`` (blocking, synchronous) in a daemon thread, waited for until the deadline; then
        `OutOfTime` naming ``request()`` (what was in flight), and the thread is left to the process's exit."""
        outcome: list[T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(work())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
                failure.append(exc)

        worker = threading.Thread(target=run, name="playbook-deadline", daemon=True)
        worker.start()
        worker.join(max(self.left(), 0.0))
        if worker.is_alive():
            raise self.passed(server, request())
        if failure:
            raise failure[0]
        return outcome[0]
