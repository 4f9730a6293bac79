"""Inspect, second source: the scan of a self-hosted checkpointer's threads.

`iter_snapshots` streams every thread of a store (`migrations_playbook.sources.store.tables`)
that belongs to a wanted graph and derives its snapshot
(`migrations_playbook.sources.store.reads`).

A large PostgreSQL store is read by one process per core (`partitioned`): each reads a
contiguous range of thread ids in one shared snapshot and judges its threads, and the
parts' findings are merged in thread id order, as one pass would have found them.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import select
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from migrations_playbook.model import ThreadSnapshot
from migrations_playbook.sources.store.attribution import Attribution
from migrations_playbook.sources.store.reads import HeadsSaver, ScanCounts, snapshot
from migrations_playbook.sources.store.standin import StandIns
from migrations_playbook.sources.store.tables import Store, StoreError

Progress = Callable[[str, int, int], None]

# -- the scan --------------------------------------------------------------------------------


def iter_snapshots(
    store: Store,
    locks: Mapping[str, Mapping[str, Any]],
    wanted: Sequence[str],
    attribution: Attribution,
    *,
    counts: ScanCounts | None = None,
    progress: Progress | None = None,
    label: str = "threads",
    fast: bool = True,
    total: int | None = None,
) -> Iterator[ThreadSnapshot]:
    """Every thread of the store that belongs to a ``wanted`` graph, as a snapshot, streamed
    (``fast=False``: every thread through ``get_state``, the reference the fast path is tested against).
    ``total``: the progress bar's total when the caller knows it (else the store counts)."""
    saver = HeadsSaver()
    stand_ins = {graph_id: StandIns(locks[graph_id], saver) for graph_id in wanted}
    counts = counts if counts is not None else ScanCounts()
    if total is None:
        total = store.count_threads() if progress else 0
    done = 0
    for thread in store.threads():
        done += 1
        if progress and (done % 200 == 0 or done == total):
            progress(label, done, max(total, done))
        graph_id = attribution.graph_of(thread)
        if graph_id not in stand_ins:
            bucket = counts.unlocked if graph_id not in locks else counts.skipped
            bucket[graph_id] = bucket.get(graph_id, 0) + 1
            continue
        yield snapshot(thread, graph_id, locks[graph_id], stand_ins[graph_id], saver, fast=fast, counts=counts)
    if progress and done and done % 200:
        progress(label, done, max(total, done))


# -- a partitioned scan ------------------------------------------------------------------------

MAX_WORKERS = 4
"""At most this many processes read one store (fewer on a machine with fewer cores)."""

R = TypeVar("R")


def workers() -> int:
    """Processes a partitioned scan uses here: one per core this process may run on, at most
    `MAX_WORKERS`; 1 where processes cannot be forked (then the scan stays in this process)."""
    if not hasattr(os, "fork") or sys.platform != "linux":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def partitioned(
    store: Store,
    work: Callable[[Store, Progress | None, int], R],
    *,
    progress: Progress | None = None,
    label: str = "threads",
    processes: int | None = None,
) -> list[R]:
    """``work(store, progress, total)`` over the whole store, its results in thread id order.

    A store that can share its snapshot (`PostgresStore.share`) is split into contiguous ranges
    of thread ids, one per process: this one reads the first range on its own connection, forked
    copies of it (LangGraph, the candidate and the locks already loaded) read the others, each on
    a new read-only connection that imports the exported snapshot, so every part reads the same
    consistent state the whole scan would have read. A part's ``work`` returns what it found
    (picklable: findings, counts, never the threads), sent back through a pipe; memory stays
    bounded per process as in one scan. An error in a part is raised here, the first range's
    first (as one scan in thread id order would raise it); the other workers are then stopped.
    Any other store, a small one, or a machine with one core: ``work`` runs once, on the whole store.
    ``progress`` (this process only) shows the threads every part has done."""
    count = processes if processes is not None else workers()
    share = getattr(store, "share", None)
    parts = share(count) if share is not None and count > 1 else []
    total = store.count_threads() if progress else 0
    if not parts:
        return [work(store, progress, total)]
    done = memoryview(mmap.mmap(-1, 8 * len(parts))).cast("q")  # shared with the forked workers: their progress

    def counter(index: int) -> Progress:
        def report(_label: str, finished: int, _total: int) -> None:
            done[index] = finished
            if index == 0 and progress is not None:
                progress(label, sum(done), max(total, sum(done)))

        return report

    def here(part: Any, index: int) -> Any:
        """``work`` over one part in this process (its own snapshot is the exported one)."""
        store.part = part  # type: ignore[attr-defined]  # PostgresStore: threads() reads this range
        try:
            return work(store, counter(index), 0)
        finally:
            store.part = None  # type: ignore[attr-defined]  # PostgresStore, as above: back to the whole store

    def tick() -> None:
        if progress is not None:
            progress(label, sum(done), max(total, sum(done)))

    children: list[tuple[int, int]] = []
    try:
        for index, part in enumerate(parts[1:], start=1):
            children.append(_fork(store, part, work, counter(index)))
        results = [here(parts[0], 0)]
        for index in range(1, len(parts)):
            pid, reader = children.pop(0)
            found = _collect(pid, reader, tick)
            # A worker that could not connect (the server's connection limit, say): its part is read here.
            results.append(here(parts[index], index) if found is _NO_CONNECTION else found)
            tick()  # the worker counted its last threads before it answered
        return results
    finally:
        for pid, reader in children:  # an error: stop the workers not collected yet
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(OSError):
                os.close(reader)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)


def _fork(store: Store, part: Any, work: Callable[[Store, Progress | None, int], Any], report: Progress) -> tuple[int, int]:
    """A worker process reading ``part``: (its pid, the pipe its result comes through)."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writer)
        return pid, reader
    # The worker. It never touches the parent's connection (closing it would end the parent's
    # session) and leaves through os._exit, so no finalizer of the parent's objects runs here.
    code = 0
    try:
        os.close(reader)
        try:
            own = type(store)(store._uri, part=part)  # type: ignore[attr-defined, call-arg]  # PostgresStore
        except StoreError:
            outcome: tuple[str, Any] = ("no connection", None)
        else:
            try:
                outcome = ("ok", work(own, report, 0))
            finally:
                own.close()
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, raised there
        outcome, code = ("error", exc), 1
    try:
        try:
            payload = pickle.dumps(outcome)
        except Exception as exc:  # noqa: BLE001 - an error that does not pickle is sent as its text
            payload = pickle.dumps(("error", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]} ({exc})")))
        with os.fdopen(writer, "wb") as out:
            out.write(payload)
    finally:
        os._exit(code)


def _collect(pid: int, reader: int, tick: Callable[[], Any]) -> Any:
    """The result a worker sends (its error raised here), showing progress while it reads; the
    worker is waited for whatever happens."""
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([reader], [], [], 0.2)
            if not ready:
                tick()
                continue
            chunk = os.read(reader, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        raise
    finally:
        os.close(reader)
        _, status = os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError(f"a scan worker ended without a result (wait status {status})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise value
    return _NO_CONNECTION if kind == "no connection" else value


_NO_CONNECTION = object()
"""`_collect`'s answer for a worker that could not open its connection."""
